// The one error policy of epochcast (docs/architecture.md, "Errors"): library code throws these typed
// exceptions with a message a user can act on; only main() turns them into exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace epochcast {

/// Bad input the user can fix: an unknown name, a count out of range, a malformed or missing
/// file. main() reports the message on one line and exits with code 2.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A well-formed configuration that cannot run as asked, such as a batch that does not fit in
/// the GPU's memory. It is bad input too (exit code 2), but callers such as a sweep can catch it
/// separately and report the row as infeasible rather than fail.
class InfeasibleError : public InputError {
public:
    using InputError::InputError;
};

/// A run that was started and failed (mpirun missing, a rank died). main() exits with code 1.
class RunError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace epochcast
