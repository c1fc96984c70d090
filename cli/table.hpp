// A small aligned text table for the CLI's human-readable output (catalog, predict, sweep, ...).
// Columns whose body cells are all numbers (or "-") are right-aligned, header included; others
// are left-aligned. Columns are separated by two spaces; a dashed rule follows the header.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "model/observation.hpp"  // percent_error, shared with the GUI

namespace epochcast::cli {

class Table {
public:
    /// `header` names the columns, with their units ("network Gb/s").
    explicit Table(std::vector<std::string> header);

    /// Add one row; it must have as many cells as the header (throws std::invalid_argument otherwise).
    void add_row(std::vector<std::string> cells);

    /// Print the header, a rule and every row, each line ending in '\n'.
    void print(std::ostream& out) const;

    /// The same as a GitHub-flavoured Markdown table (numeric columns right-aligned).
    void print_markdown(std::ostream& out) const;

private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

/// `value` in fixed notation with at most `max_decimals` decimals and no trailing zeros
/// (24.48 -> "24.48", 8 -> "8", 0.918 -> "0.918").
std::string format_number(double value, int max_decimals = 4);

/// A difference in percent with its sign and one decimal: "+4.2 %", "-3.1 %", "+0 %".
std::string format_signed_percent(double percent);

/// `value` to `digits` significant digits as printf's %g writes it, trailing zeros dropped: a
/// rate or a time a person reads ("0.000394", "1.5", "12" at 3 digits).
std::string format_significant(double value, int digits = 3);

/// The error of `predicted` against `measured` as a table beside both at `decimals` shows it:
/// "4.5 %" (one decimal), or "-" where nothing was measured or the measurement prints as 0 (issue
/// 59, item 15: "-100 %" stood beside two zeros, a percentage of a figure too small to show).
std::string error_cell(double predicted, std::optional<double> measured, int decimals);

/// A probability as a percentage with one decimal ("97.7%"), saying "> 99.9%" or "< 0.1%" rather
/// than rounding a chance that is not certain to 100% or 0%.
std::string format_chance(double probability);

/// format_number with the integer part in groups of three, for tables (1217.54 -> "1,217.5" with
/// one decimal; 143812 -> "143,812").
std::string format_grouped(double value, int max_decimals);

/// Append `value` with 7 significant digits, as printf's "%.7g" writes it (1234.567, 0.0123457,
/// 1.234568e+07), several times faster (the sweep writes tens of millions of numbers): numbers
/// from 1e-4 to below 1e7 are formatted with integer arithmetic, the rest by std::to_chars.
void append_significant(std::string& out, double value);

/// True when `text` is a number as format_number, format_count ("1,281,167") or format_dollars
/// ("$1,234.56") writes it, or "-", the placeholder for none.
bool looks_numeric(const std::string& text);

}  // namespace epochcast::cli
