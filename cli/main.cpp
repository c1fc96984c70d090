// The only place where errors become exit codes: 2 for bad input, 1 for a failed run.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        epochcast::cli::run(args, std::cout);
        return 0;
    } catch (const epochcast::InputError& error) {
        std::cerr << "epochcast: error: " << error.what() << '\n';
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "epochcast: failed: " << error.what() << '\n';
        return 1;
    }
}
