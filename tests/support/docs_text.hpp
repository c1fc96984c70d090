// The repository's own docs as test input: a page of docs/, one section of it, and the JSON example
// of a section, so that tests hold the docs to the code (docs/formats.md's examples must parse,
// docs/cli.md must name every flag). Shared by every test folder; needs EPOCHCAST_SOURCE_DIR.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace epochcast::testing {

/// The text of docs/`page`; "" when it cannot be read (the caller's expectations then fail).
inline std::string docs_page(const std::string& page) {
    std::ifstream in(std::string(EPOCHCAST_SOURCE_DIR) + "/docs/" + page);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// The section of `text` under the level-2 heading that starts with `heading` ("## predict"),
/// up to the next level-2 heading; "" when there is none.
inline std::string docs_section(const std::string& text, const std::string& heading) {
    std::size_t start = text.rfind(heading + "\n", 0) == 0 ? 0 : text.find("\n" + heading);
    while (start != std::string::npos) {
        const std::size_t from = start == 0 ? 0 : start + 1;
        const std::size_t line_end = text.find('\n', from);
        const std::string line = text.substr(from, line_end - from);
        // "## plan" must not match "## plan-calibration": the heading ends the line or a space follows.
        if (line == heading || line.rfind(heading + " ", 0) == 0) {
            const std::size_t end = text.find("\n## ", from + 1);
            return text.substr(from, end == std::string::npos ? std::string::npos : end - from);
        }
        start = text.find("\n" + heading, from + 1);
    }
    return "";
}

/// The first ```json block of `section`, without its fences; "" when it has none.
inline std::string json_example(const std::string& section) {
    const std::string open = "```json\n";
    const std::size_t start = section.find(open);
    if (start == std::string::npos) return "";
    const std::size_t end = section.find("\n```", start + open.size());
    if (end == std::string::npos) return "";
    return section.substr(start + open.size(), end + 1 - start - open.size());
}

}  // namespace epochcast::testing
