#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace epochcast::cli {
void register_predict(CLI::App& app, std::ostream& out) { (void)app; (void)out; }  // written next
}  // namespace epochcast::cli
