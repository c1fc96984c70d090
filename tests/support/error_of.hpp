// The message of the InputError a piece of code throws, for tests of error messages. Shared by
// every test folder.
#pragma once

#include <string>

#include "model/errors.hpp"

namespace epochcast::testing {

/// The InputError's message of `code()`, or "" when it throws none; any other exception escapes
/// (and fails the test).
template <typename Code>
std::string input_error_of(Code&& code) {
    try {
        code();
    } catch (const InputError& error) {
        return error.what();
    }
    return "";
}

}  // namespace epochcast::testing
