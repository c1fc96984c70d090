// The only place where errors become exit codes (cli/output.hpp lists them): 0 an answer, 1 a
// failed run or an internal error, 2 bad input or a failed write, 3 plan found nothing that meets
// the deadline or the budget. Every error is one escaped line on stderr.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/output.hpp"

int main(int argc, char** argv) {
    epochcast::cli::guard_standard_streams();
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        epochcast::cli::run(args, std::cout);
        return 0;
    } catch (...) {
        return epochcast::cli::report_error(std::current_exception(), std::cerr);
    }
}
