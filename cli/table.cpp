#include "cli/table.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "model/text_io.hpp"

namespace epochcast::cli {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::add_row(std::vector<std::string> cells) {
    if (cells.size() != header_.size()) {
        throw std::invalid_argument("Table::add_row: " + std::to_string(cells.size()) + " cells for " +
                                    std::to_string(header_.size()) + " columns");
    }
    rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out) const {
    const std::size_t columns = header_.size();
    std::vector<std::size_t> width(columns, 0);
    std::vector<bool> right(columns, !rows_.empty());
    for (std::size_t c = 0; c < columns; ++c) {
        width[c] = header_[c].size();
        for (const auto& row : rows_) {
            width[c] = std::max(width[c], row[c].size());
            if (!looks_numeric(row[c])) right[c] = false;
        }
    }
    const auto print_line = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t c = 0; c < columns; ++c) {
            if (c > 0) line += "  ";
            const std::string padding(width[c] - cells[c].size(), ' ');
            line += right[c] ? padding + cells[c] : cells[c] + padding;
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out << line << '\n';
    };
    print_line(header_);
    std::vector<std::string> rule;
    for (std::size_t c = 0; c < columns; ++c) rule.emplace_back(width[c], '-');
    print_line(rule);
    for (const auto& row : rows_) print_line(row);
}

void Table::print_markdown(std::ostream& out) const {
    const std::size_t columns = header_.size();
    const auto print_line = [&](const std::vector<std::string>& cells) {
        out << '|';
        for (const std::string& cell : cells) out << ' ' << cell << " |";
        out << '\n';
    };
    print_line(header_);
    out << '|';
    for (std::size_t c = 0; c < columns; ++c) {
        bool numeric = !rows_.empty();
        for (const auto& row : rows_) numeric = numeric && looks_numeric(row[c]);
        out << (numeric ? " ---: |" : " --- |");
    }
    out << '\n';
    for (const auto& row : rows_) print_line(row);
}

void append_significant(std::string& out, double value) {
    constexpr int kDigits = 7;
    static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11};
    double magnitude = std::fabs(value);
    if (value == 0) {
        out += '0';
        return;
    }
    if (!(magnitude >= 1e-4 && magnitude < 1e7)) {  // NaN, infinities, tiny and huge: the library
        char buffer[32];
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, kDigits);
        out.append(buffer, r.ptr);
        return;
    }
    // The decimal exponent by comparison (a log10 per number costs more than the rest together).
    static constexpr double kThresholds[] = {1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1e0, 1e-1, 1e-2, 1e-3};
    int exponent = 6;
    for (double threshold : kThresholds) {
        if (magnitude >= threshold) break;
        --exponent;
    }  // -4..6
    // The 7 significant digits as an integer; rounding may carry into an 8th digit.
    long long mantissa = std::llround(magnitude * kPow10[kDigits - 1 - exponent]);
    if (mantissa >= 10'000'000) {
        mantissa /= 10;
        ++exponent;
        if (exponent >= 7) {  // 9999999.5 -> 1e+07: the library's form
            char buffer[32];
            const auto r = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, kDigits);
            out.append(buffer, r.ptr);
            return;
        }
    } else if (mantissa < 1'000'000) {  // log10 rounded down past a power of ten
        mantissa *= 10;
        --exponent;
    }
    char digits[kDigits];
    for (int i = kDigits - 1; i >= 0; --i) {
        digits[i] = static_cast<char>('0' + mantissa % 10);
        mantissa /= 10;
    }
    int used = kDigits;
    while (used > 1 && used > exponent + 1 && digits[used - 1] == '0') --used;  // trailing zeros after the point
    // Composed here and appended once: at most a sign, "0.", 3 zeros and 7 digits.
    char text[16];
    char* end = text;
    if (value < 0) *end++ = '-';
    if (exponent >= 0) {
        end = std::copy(digits, digits + exponent + 1, end);
        if (used > exponent + 1) {
            *end++ = '.';
            end = std::copy(digits + exponent + 1, digits + used, end);
        }
    } else {
        *end++ = '0';
        *end++ = '.';
        end = std::fill_n(end, -exponent - 1, '0');
        end = std::copy(digits, digits + used, end);
    }
    out.append(text, end);
}

std::string format_signed_percent(double percent) {
    std::string text(percent >= 0 ? "+" : "");  // appended, not "+" + string: GCC 12 warns (-Wrestrict) on that
    text += format_number(percent, 1);
    text += " %";
    return text;
}

std::string format_significant(double value, int digits) {
    char text[48];
    std::snprintf(text, sizeof text, "%.*g", std::max(1, digits), value);
    return text;
}

std::string format_number(double value, int max_decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", std::max(0, max_decimals), value);
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
        text.erase(text.find_last_not_of('0') + 1);
        if (text.back() == '.') text.pop_back();
    }
    if (text == "-0") text = "0";
    return text;
}

std::string error_cell(double predicted, std::optional<double> measured, int decimals) {
    if (!measured || !(*measured > 0) || format_number(*measured, decimals) == format_number(0.0, decimals)) return "-";
    return format_number(percent_error(predicted, *measured), 1) + " %";
}

std::string format_chance(double probability) {
    if (probability > 0 && probability < 0.0005) return "< 0.1%";
    if (probability < 1 && probability >= 0.9995) return "> 99.9%";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * std::clamp(probability, 0.0, 1.0));
    return buffer;
}

std::string format_grouped(double value, int max_decimals) {
    return group_thousands(format_number(value, max_decimals));
}

bool looks_numeric(const std::string& text) {
    if (text == "-") return true;
    // A sign, then "$" (format_dollars), then digits in groups of three when separated by commas
    // (format_count), then strtod's view of the rest.
    std::string plain;
    std::size_t i = 0;
    if (i < text.size() && text[i] == '-') plain += text[i++];
    if (i < text.size() && text[i] == '$') ++i;
    std::size_t digits = 0;  // in the current group
    bool grouped = false;
    for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == ','); ++i) {
        if (text[i] == ',') {
            if (digits == 0 || digits > 3 || (grouped && digits != 3)) return false;
            grouped = true;
            digits = 0;
            continue;
        }
        plain += text[i];
        ++digits;
    }
    if (grouped && digits != 3) return false;
    plain.append(text, i);
    if (plain.empty() || plain == "-") return false;
    char* end = nullptr;
    std::strtod(plain.c_str(), &end);
    return end == plain.c_str() + plain.size();
}

}  // namespace epochcast::cli
