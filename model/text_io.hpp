// Reading the project's text files with errors a user can act on. Shared by the catalog, the
// calibration and the traces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace epochcast {

/// The largest input file epochcast reads (a catalog, a trace, a spec, a hostfile, a log): 256 MiB,
/// far beyond any real one.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;

/// The whole file. Throws InputError "cannot read <what> file '<path>': <reason>" when it is
/// missing, a directory, not a regular file (a FIFO, which would block, or a device such as
/// /dev/zero, checked before it is opened), unreadable or larger than kMaxInputFileBytes.
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

/// A file made new for writing beside `target`: "<target>.<tag>.<pid>", or with ".1", ".2", ...
/// after it where that name exists. Opened O_CREAT | O_EXCL | O_NOFOLLOW, so a file or a symbolic
/// link planted at a predictable name is never written through. `fd` is -1 (and errno set) when
/// none could be made.
struct NewFile {
    int fd = -1;
    std::filesystem::path path;
};
NewFile create_file_beside(const std::filesystem::path& target, std::string_view tag);

/// Whether `name` (a file name, no folder) is one create_file_beside(target, tag) makes for a
/// target named `target_name`: "<target_name>.<tag>.<pid>" or "<target_name>.<tag>.<pid>.<n>".
bool is_name_beside(std::string_view name, std::string_view target_name, std::string_view tag);

/// Write `text` to `path` atomically: a new temporary file beside it (create_file_beside, tag
/// "tmp"), then a rename, so that a failure leaves no half-written file and no other file is
/// written. Throws InputError "cannot write <what> file '<path>'".
void write_text_file_atomically(const std::filesystem::path& path, std::string_view text, std::string_view what);

/// The deepest nesting of arrays and objects a JSON input may have: every file epochcast reads
/// nests fewer than 10 levels; the parser recurses once a level, and a million levels overflow the
/// stack (issue 59: a crafted checkpoint header crashed the trainer).
inline constexpr std::size_t kMaxJsonDepth = 256;

/// Parse JSON: the one reader of every JSON input. Throws InputError "<origin>: malformed JSON at
/// line L, column C (byte N): <what is wrong>" on a syntax error (one line, without nlohmann's
/// "[json.exception...]" tag); and one naming the origin for a number beyond a double's range, for
/// nesting deeper than kMaxJsonDepth (checked before parsing), for a NUL byte (which nlohmann's
/// parser takes for the end of the input, dropping what follows), and for a key an object gives
/// twice (the last would win silently: a catalog entry's price given twice), naming the key.
nlohmann::json parse_json(std::string_view text, std::string_view origin);

/// parse_json without the errors: a discarded value (is_discarded()) where it would throw. For the
/// inputs a program reads from another process (progress reports, a simulation's reply), where a
/// bad one is skipped.
nlohmann::json parse_json_or_discarded(std::string_view text);

/// A JSON value as a whole number: std::nullopt unless it is an integer that an int64 holds. A
/// float (2.5, or 1e19 written with an exponent) or an unsigned integer past 2^63 - 1 is none:
/// nlohmann's get<> would truncate the one and wrap the other. The whole numbers of sweep specs,
/// calibrations, traces, checkpoints and the trainer's host description are read through it.
std::optional<std::int64_t> json_whole_number(const nlohmann::json& value);

/// The most bytes of a user's text that a message echoes (escape_for_message): a host name or a
/// catalog name of 100,000 characters is cut there, its length said.
inline constexpr std::size_t kMessageTextMaxBytes = 256;

/// `text` made safe to echo inside a one-line error message: control characters become \n, \r,
/// \t or \xNN, bytes that are not UTF-8 become \xNN, and characters that change how a line reads
/// without showing themselves (C1 controls, zero-width and direction marks, bidirectional
/// overrides and isolates, the byte-order mark) \uXXXX; past `max_bytes` (a user's text inside a
/// message: kMessageTextMaxBytes) it is cut, with "... (N bytes in all)". Everything else is kept
/// as is. A whole message, made of such parts, is escaped with no limit (escape_for_terminal).
std::string escape_for_message(std::string_view text, std::size_t max_bytes = kMessageTextMaxBytes);

/// `number` (a plain decimal: an optional '-', digits, optionally '.' and more digits) with its
/// integer part in groups of three: "-1234567.25" -> "-1,234,567.25".
std::string group_thousands(std::string_view number);

/// A whole count with thousands separators: 34560 -> "34,560" (rounded to the nearest whole).
/// Safe for any double: beyond 10^18 in magnitude "1e+20" (three significant digits), and
/// "inf", "-inf" or "nan" for what is not finite.
std::string format_count(double count);

/// A byte count in GiB (2^30 bytes) to three significant digits, for messages: "220", "0.5".
std::string format_gib(double bytes);

/// A number as printf's "%g" writes it (6 significant digits, no trailing zeros), or with as many
/// more digits as it takes to read back as the same double (1.0000001e+12): for echoing a value
/// back in an error message.
std::string shortest(double value);

/// A whole number `low` to `high` as a flag gives it: decimal digits alone (no sign, point,
/// exponent or spaces). Throws InputError naming `flag`, the range and the text otherwise: CLI11
/// read "1e26" and 2^64 into an unsigned flag as 2^64 - 1 and wrapped "-5".
std::uint64_t parse_whole_number(const std::string& text, const std::string& flag, std::uint64_t low,
                                 std::uint64_t high);

/// "2h", "90min", "1h30m", "1d12h", "5400s" or a bare number of hours, in seconds: decimal numbers
/// (digits, at most one '.'), each followed by a unit, the units in falling order and each at most
/// once. Throws InputError naming `flag` and the text otherwise, and past ten years. Every duration a
/// flag (--deadline, --checkpoint-every) or a sweep spec (checkpoint_every) gives is read by it.
double parse_duration_s(const std::string& text, const std::string& flag);

/// A duration that may also be none (--spot-replacement-wait, --startup): "0", or a duration of
/// zero in parse_duration_s's grammar ("0s", "0.0s", "0min"), is 0; else parse_duration_s.
double parse_duration_or_zero_s(const std::string& text, const std::string& flag);

}  // namespace epochcast
