#include "cli/common.hpp"

namespace epochcast::cli {

Catalog load_catalog(const std::vector<std::string>& extra_files) {
    Catalog catalog = Catalog::built_in();
    for (const std::string& file : extra_files) catalog.merge(Catalog::load(file, catalog));
    return catalog;
}

}  // namespace epochcast::cli
