#include "model/text_io.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "model/errors.hpp"

namespace epochcast {

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
    const std::string prefix = "cannot read " + std::string(what) + " file '" + path.string() + "': ";
    std::error_code error;
    if (!std::filesystem::exists(path, error)) throw InputError(prefix + std::strerror(ENOENT));
    if (std::filesystem::is_directory(path, error)) throw InputError(prefix + std::strerror(EISDIR));
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int code = errno;
        throw InputError(prefix + (code != 0 ? std::strerror(code) : "cannot open"));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw InputError(prefix + "read error");
    return text.str();
}

nlohmann::json parse_json(std::string_view text, std::string_view origin) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& error) {
        throw InputError(std::string(origin) + ": malformed JSON at byte " + std::to_string(error.byte) + ": " +
                         error.what());
    } catch (const nlohmann::json::out_of_range&) {
        // Only a number beyond a double's range (1e400) gets here while parsing.
        throw InputError(std::string(origin) + ": a number is beyond the range of a double (about 1.8e308)");
    }
}

void write_text_file_atomically(const std::filesystem::path& path, std::string_view text, std::string_view what) {
    const std::string failure = "cannot write " + std::string(what) + " file '" + path.string() + "'";
    std::filesystem::path temporary = path;
    temporary += ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out) throw InputError(failure);
        out << text;
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw InputError(failure);
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw InputError(failure);
    }
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
    const long long whole = static_cast<long long>(rounded);
    const std::string digits = std::to_string(whole < 0 ? -whole : whole);
    std::string out = whole < 0 ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

}  // namespace epochcast
