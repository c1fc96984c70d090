#include "cli/table.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

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

bool looks_numeric(const std::string& text) {
    if (text == "-") return true;
    if (text.empty()) return false;
    char* end = nullptr;
    std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size();
}

}  // namespace epochcast::cli
