#include "model/text_io.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "model/errors.hpp"
#include "model/types.hpp"

namespace epochcast {

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
    const std::string prefix =
        "cannot read " + std::string(what) + " file '" + escape_for_message(path.string()) + "': ";
    std::error_code error;
    if (!std::filesystem::exists(path, error)) throw InputError(prefix + std::strerror(ENOENT));
    if (std::filesystem::is_directory(path, error)) throw InputError(prefix + std::strerror(EISDIR));
    // A FIFO would block the open until a writer came, a device never ends: regular files only.
    if (!std::filesystem::is_regular_file(path, error)) {
        throw InputError(prefix + "not a regular file (a FIFO, a device or a socket), which epochcast does not read");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int code = errno;
        throw InputError(prefix + (code != 0 ? std::strerror(code) : "cannot open"));
    }
    // In chunks, to at most kMaxInputFileBytes: /dev/zero or a runaway file is refused, not read
    // until memory runs out.
    std::string text;
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        if (text.size() + static_cast<std::size_t>(in.gcount()) > kMaxInputFileBytes) {
            throw InputError(prefix + "larger than " + std::to_string(kMaxInputFileBytes >> 20) +
                             " MiB, more than any input epochcast reads");
        }
        text.append(chunk, static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) throw InputError(prefix + "read error");
    return text;
}

namespace {

/// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
/// as "line 1, column 5 (byte 5): syntax error ...": the library's own tag is no help to a user.
std::string parse_error_detail(std::string_view what, std::size_t byte) {
    const std::string at_byte = "byte " + std::to_string(byte);
    if (const auto tag = what.find("] "); tag != std::string_view::npos) what.remove_prefix(tag + 2);
    constexpr std::string_view kPrefix = "parse error at ";
    if (what.substr(0, kPrefix.size()) == kPrefix) {
        what.remove_prefix(kPrefix.size());
        const auto colon = what.find(": ");
        if (colon != std::string_view::npos) {
            return escape_for_message(what.substr(0, colon)) + " (" + at_byte +
                   "): " + escape_for_message(what.substr(colon + 2));
        }
    }
    return at_byte + ": " + escape_for_message(what);
}

}  // namespace

std::optional<std::int64_t> json_whole_number(const nlohmann::json& value) {
    if (!value.is_number_integer()) return std::nullopt;
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
    }
    return value.get<std::int64_t>();
}

namespace {

/// The deepest nesting of `text`'s arrays and objects outside strings, stopping once past `limit`;
/// and the byte where it went past, else npos.
std::size_t too_deep_at(std::string_view text, std::size_t limit) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::string_view::npos;
}

/// nlohmann's own DOM builder, noting the first key an object gives twice (one list of keys per
/// open object, innermost last). The library's callback parser could note it too, but at each
/// object's end it scans the enclosing array for a discarded value: quadratic in an array's length
/// (a catalog of 100,000 entries took 14 s to read, and ten minutes under ASan).
class DomNotingDuplicateKeys {
public:
    using Json = nlohmann::json;
    explicit DomNotingDuplicateKeys(Json& result) : dom_(result, /*allow_exceptions=*/true) {}

    bool null() { return dom_.null(); }
    bool boolean(bool value) { return dom_.boolean(value); }
    bool number_integer(Json::number_integer_t value) { return dom_.number_integer(value); }
    bool number_unsigned(Json::number_unsigned_t value) { return dom_.number_unsigned(value); }
    bool number_float(Json::number_float_t value, const Json::string_t& text) { return dom_.number_float(value, text); }
    bool string(Json::string_t& value) { return dom_.string(value); }
    bool binary(Json::binary_t& value) { return dom_.binary(value); }
    bool start_object(std::size_t elements) {
        open_.emplace_back();
        return dom_.start_object(elements);
    }
    bool key(Json::string_t& key) {
        if (!open_.empty() && duplicate_.empty()) {
            std::vector<std::string>& keys = open_.back();
            if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
                duplicate_ = key;
            } else {
                keys.push_back(key);
            }
        }
        return dom_.key(key);
    }
    bool end_object() {
        if (!open_.empty()) open_.pop_back();
        return dom_.end_object();
    }
    bool start_array(std::size_t elements) { return dom_.start_array(elements); }
    bool end_array() { return dom_.end_array(); }
    template <class Exception>
    bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
        return dom_.parse_error(position, token, error);  // throws `error`
    }

    /// The first key given twice in one object, or empty.
    const std::string& duplicate() const { return duplicate_; }

private:
    nlohmann::detail::json_sax_dom_parser<Json> dom_;
    std::vector<std::vector<std::string>> open_;
    std::string duplicate_;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, std::string_view origin) {
    if (const std::size_t at = too_deep_at(text, kMaxJsonDepth); at != std::string_view::npos) {
        throw InputError(std::string(origin) + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                         " levels deep (at byte " + std::to_string(at) + "): no epochcast file nests that deep");
    }
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
        throw InputError(std::string(origin) + ": a NUL byte at byte " + std::to_string(nul) +
                         " (a JSON file holds text; what follows it would be dropped)");
    }
    try {
        nlohmann::json parsed;
        DomNotingDuplicateKeys dom(parsed);
        nlohmann::json::sax_parse(text.begin(), text.end(), &dom);
        if (!dom.duplicate().empty()) {
            throw InputError(std::string(origin) + ": the key \"" + escape_for_message(dom.duplicate()) +
                             "\" is given twice in one object (which one holds?)");
        }
        return parsed;
    } catch (const nlohmann::json::parse_error& error) {
        throw InputError(std::string(origin) + ": malformed JSON at " + parse_error_detail(error.what(), error.byte));
    } catch (const nlohmann::json::out_of_range&) {
        // Only a number beyond a double's range (1e400) gets here while parsing.
        throw InputError(std::string(origin) + ": a number is beyond the range of a double (about 1.8e308)");
    }
}

nlohmann::json parse_json_or_discarded(std::string_view text) {
    try {
        return parse_json(text, "");
    } catch (const InputError&) {
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
}

NewFile create_file_beside(const std::filesystem::path& target, std::string_view tag) {
    const std::string stem = target.string() + "." + std::string(tag) + "." + std::to_string(::getpid());
    for (int attempt = 0; attempt < 100; ++attempt) {
        NewFile file;
        file.path = attempt == 0 ? stem : stem + "." + std::to_string(attempt);
        file.fd = ::open(file.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (file.fd >= 0 || errno != EEXIST) return file;
    }
    errno = EEXIST;
    return {};
}

bool is_name_beside(std::string_view name, std::string_view target_name, std::string_view tag) {
    const std::string prefix = std::string(target_name) + "." + std::string(tag) + ".";
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
    bool digit_before = false;  // the pid, then each attempt, is digits after a dot
    for (const char c : name.substr(prefix.size())) {
        if (c >= '0' && c <= '9') {
            digit_before = true;
        } else if (c == '.' && digit_before) {
            digit_before = false;
        } else {
            return false;
        }
    }
    return digit_before;
}

void write_text_file_atomically(const std::filesystem::path& path, std::string_view text, std::string_view what) {
    const std::string failure =
        "cannot write " + std::string(what) + " file '" + escape_for_message(path.string()) + "'";
    const NewFile file = create_file_beside(path, "tmp");
    if (file.fd < 0) throw InputError(failure + ": " + std::strerror(errno));
    const std::filesystem::path& temporary = file.path;
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t wrote = ::write(file.fd, text.data() + done, text.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) {
            const int code = errno;
            ::close(file.fd);
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw InputError(failure + ": " + std::strerror(code));
        }
        done += static_cast<std::size_t>(wrote);
    }
    if (::close(file.fd) != 0) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw InputError(failure);
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw InputError(failure);
    }
}

namespace {

/// The length of the valid UTF-8 sequence at the start of `text` (1 to 4), or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;   // no overlong forms
        if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
    }
    return length;
}

}  // namespace

namespace {

/// The code point of a well-formed UTF-8 sequence of `length` bytes at the front of `text`.
char32_t utf8_code_point(std::string_view text, std::size_t length) {
    const auto byte = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(text[i])); };
    if (length == 2) return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    if (length == 3) return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
}

/// Characters that change how a line reads without showing themselves: C1 controls, the line and
/// paragraph separators, zero-width and direction marks, the bidirectional embeddings, overrides
/// and isolates (a right-to-left override makes "exe.txt" of "txt.exe"), and the byte-order mark.
bool is_invisible_format(char32_t c) {
    return (c >= 0x80 && c <= 0x9F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x2028 && c <= 0x202E) ||
           (c >= 0x2060 && c <= 0x2069) || c == 0xFEFF;
}

}  // namespace

std::string escape_for_message(std::string_view text, std::size_t max_bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    const std::size_t given = text.size();
    const bool cut = given > max_bytes;
    if (cut) {
        // Cut before a character, not inside one.
        std::size_t end = max_bytes;
        while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
        text = text.substr(0, end);
    }
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const std::size_t length = utf8_sequence_length(text);
        const auto c = static_cast<unsigned char>(text.front());
        if (length == 1 && c >= 0x20 && c != 0x7F) {
            out += text.front();
        } else if (length > 1) {
            const char32_t point = utf8_code_point(text, length);
            if (is_invisible_format(point)) {
                char escaped[16];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(point));
                out += escaped;
            } else {
                out.append(text.substr(0, length));
            }
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        }
        text.remove_prefix(length > 1 ? length : 1);
    }
    if (cut) out += "... (" + format_count(static_cast<double>(given)) + " bytes in all)";
    return out;
}

std::string format_gib(double bytes) {
    std::ostringstream out;
    out.precision(3);
    out << bytes / kBytesPerGiB;
    return out.str();
}

std::string format_count(double count) {
    if (std::isnan(count)) return "nan";
    if (std::isinf(count)) return count < 0 ? "-inf" : "inf";
    const double rounded = std::round(count);
    // Past 10^18 a long long no longer holds every value a double may: scientific notation.
    if (std::fabs(rounded) >= 1e18) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.3g", rounded);
        return buffer;
    }
    return group_thousands(std::to_string(static_cast<long long>(rounded)));
}

std::string group_thousands(std::string_view number) {
    std::string out(number);
    const std::size_t first = !out.empty() && out.front() == '-' ? 1 : 0;
    const std::size_t end = std::min(out.find('.'), out.size());
    for (std::size_t at = end; at > first + 3; at -= 3) out.insert(at - 3, 1, ',');
    return out;
}

std::string shortest(double value) {
    char buffer[32];
    // %g's six digits unless the number needs more to be read back as itself: "--budget must be at
    // most $1,000,000,000,000.00 (got 1e+12)" was said of 1.0000001e12.
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
        if (!std::isfinite(value) || std::strtod(buffer, nullptr) == value) break;
    }
    return buffer;
}

std::uint64_t parse_whole_number(const std::string& text, const std::string& flag, std::uint64_t low,
                                 std::uint64_t high) {
    const auto bad = [&] {
        std::string message = flag;
        message += " must be a whole number from ";
        message += group_thousands(std::to_string(low));
        message += " to ";
        message += group_thousands(std::to_string(high));
        message += ", got '";
        message += escape_for_message(text.substr(0, 40));
        message += text.size() > 40 ? "...'" : "'";
        return InputError(message);
    };
    if (text.empty() || text.size() > 20 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw bad();
    }
    std::uint64_t value = 0;
    for (const char c : text) {
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) throw bad();
        value = value * 10 + digit;
    }
    if (value < low || value > high) throw bad();
    return value;
}

namespace {

/// The longest duration a flag or a sweep spec takes: ten years. Past it nothing changes the
/// answer, and the text would print "inf days".
constexpr double kMaxDurationS = 3650.0 * 86400;

}  // namespace

namespace {

/// The seconds `text` spells (parse_duration_s's grammar), 0 included.
double duration_total_s(const std::string& text, const std::string& flag) {
    auto bad = [&text, &flag] {
        std::string message = flag;
        message += " '";
        message += escape_for_message(text);
        message += "': give a duration such as 2h, 90min, 1h30m or 5400s";
        return InputError(message);
    };
    // Units in the order they may follow each other, with their seconds.
    struct Unit {
        std::vector<std::string> names;
        double seconds;
    };
    const std::vector<Unit> units = {{{"d", "day", "days"}, 86400},
                                     {{"h", "hour", "hours"}, 3600},
                                     {{"m", "min", "mins", "minutes"}, 60},
                                     {{"s", "sec", "seconds"}, 1}};
    double total = 0;
    std::size_t pos = 0;
    std::size_t next_unit = 0;  // units before this one are used up
    bool any = false;
    while (pos < text.size()) {
        const std::size_t start = pos;
        bool dot = false;
        while (pos < text.size() &&
               (std::isdigit(static_cast<unsigned char>(text[pos])) || (text[pos] == '.' && !dot))) {
            dot = dot || text[pos] == '.';
            ++pos;
        }
        const std::string number = text.substr(start, pos - start);
        if (number.empty() || number == ".") throw bad();
        if (number.size() > 12) throw bad();  // past 10^12 of any unit is beyond kMaxDurationS
        const double value = std::stod(number);
        std::string unit;
        while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) unit += text[pos++];
        double scale = 0;
        if (unit.empty()) {
            if (any || pos != text.size()) throw bad();
            scale = 3600;  // a bare number: hours
        } else {
            for (std::size_t u = next_unit; u < units.size() && scale == 0; ++u) {
                for (const std::string& name : units[u].names) {
                    if (unit == name) {
                        scale = units[u].seconds;
                        next_unit = u + 1;
                    }
                }
            }
            if (scale == 0) throw bad();
        }
        total += value * scale;
        any = true;
    }
    if (!any) throw bad();
    if (total > kMaxDurationS) {
        std::string message = flag;
        message += " '";
        message += escape_for_message(text);
        message += "' is beyond 10 years; give at most 3650d";
        throw InputError(message);
    }
    return total;
}

}  // namespace

double parse_duration_s(const std::string& text, const std::string& flag) {
    const double total = duration_total_s(text, flag);
    if (!(total > 0)) {
        throw InputError(flag + " '" + escape_for_message(text) +
                         "': give a duration above zero, such as 2h, 90min, 1h30m or 5400s");
    }
    return total;
}

double parse_duration_or_zero_s(const std::string& text, const std::string& flag) {
    // "0s" and "0.0s" as well as "0": Python's timedelta(0) is written "0.0s".
    return text == "0" ? 0.0 : duration_total_s(text, flag);
}

}  // namespace epochcast
