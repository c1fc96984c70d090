// What every fuzz target shares: the contract each parser must keep on any bytes. An
// epochcast::InputError is an expected outcome (bad input the user can fix), and its message must
// be one line (main() prints it as the whole error) without nlohmann's "[json.exception...]" tag.
// Any other exception (nlohmann's own, std::stod's "stod", bad_alloc, ...) would reach the user as
// an internal error with exit 1: the target aborts, so libFuzzer records the input as a crash.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "model/errors.hpp"

namespace epochcast::fuzz {

[[noreturn]] inline void fail(std::string_view what, std::string_view detail) {
    std::fprintf(stderr, "fuzz contract broken: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
                 static_cast<int>(detail.size()), detail.data());
    std::abort();
}

/// Aborts unless `value` is finite and >= 0 (a figure a parser lets through).
inline void require_finite_non_negative(double value, std::string_view name) {
    if (!std::isfinite(value) || value < 0) fail("a parsed figure is not finite and non-negative", name);
}

/// Calls `parse` on the input; see the header comment for what counts as a crash.
template <typename Parse>
int run(const std::uint8_t* data, std::size_t size, Parse&& parse) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        parse(text);
    } catch (const epochcast::InputError& error) {
        const std::string_view message = error.what();
        if (message.empty()) fail("an InputError without a message", "");
        if (message.find('\n') != std::string_view::npos) fail("an InputError message of more than one line", message);
        // (Unless the input itself holds the text, echoed back: the fuzzer finds that trick.)
        if (message.find("[json.exception") != std::string_view::npos &&
            text.find("json.exception") == std::string_view::npos) {
            fail("an InputError that passes nlohmann's own text on", message);
        }
    } catch (const std::exception& error) {
        fail("an exception other than InputError", error.what());
    } catch (...) {
        fail("a non-standard exception", "");
    }
    return 0;
}

}  // namespace epochcast::fuzz
