// Helpers shared by the CLI subcommands.
#pragma once

#include <string>
#include <vector>

#include "model/catalog.hpp"

namespace epochcast::cli {

/// The built-in catalog with each `--catalog` file merged over it, in order: a later file's
/// entries replace earlier ones of the same name, new ones are added. A file may refer to GPUs
/// already known (built in or from an earlier file). Throws InputError naming the file and entry.
Catalog load_catalog(const std::vector<std::string>& extra_files);

}  // namespace epochcast::cli
