#include "cli/common.hpp"

#include "model/errors.hpp"
#include "traces/trace.hpp"

namespace epochcast::cli {

Catalog load_catalog(const std::vector<std::string>& extra_files) {
    Catalog catalog = Catalog::built_in();
    for (const std::string& file : extra_files) catalog.merge(Catalog::load(file, catalog));
    return catalog;
}

Calibration load_calibration(const std::string& name_or_path) {
    if (name_or_path.empty() || name_or_path == "built-in") return Calibration::built_in();
    if (name_or_path == "data-free") return Calibration::data_free_prior();
    return Calibration::load(name_or_path);
}

Evidence load_evidence(const std::vector<std::string>& files, const Catalog& catalog) {
    Evidence evidence;
    for (const std::string& file : files) {
        std::string path = file;
        int selected = -1;
        if (const auto hash = file.rfind('#'); hash != std::string::npos) {
            path = file.substr(0, hash);
            const std::string index = file.substr(hash + 1);
            try {
                std::size_t used = 0;
                selected = std::stoi(index, &used);
                if (used != index.size() || selected < 0) throw std::invalid_argument(index);
            } catch (const std::exception&) {
                throw InputError("'" + file + "': after '#' comes a run index (0, 1, ...), not '" + index + "'");
            }
        }
        const Trace trace = read_trace(path, catalog);
        if (selected >= 0) {
            if (static_cast<std::size_t>(selected) >= trace.runs.size()) {
                throw InputError("'" + file + "': " + path + " has " + std::to_string(trace.runs.size()) + " runs");
            }
            evidence.runs.push_back(trace.runs[static_cast<std::size_t>(selected)].observation);
            continue;
        }
        for (const TraceRun& run : trace.runs) evidence.runs.push_back(run.observation);
        for (std::size_t i = 0; i < trace.networks.size(); ++i) {
            const NetworkMeasurement& m = trace.networks[i];
            const int adapters = catalog.instance(m.instance).efa_adapters;
            const int used = m.efa_adapters < 0 ? adapters : m.efa_adapters;
            if (used > 0 && used < adapters) continue;
            evidence.networks.push_back({path + "#networks[" + std::to_string(i) + "]", m.instance, used, m.ranks,
                                         m.bus_bandwidth_GBps});
        }
        evidence.comparisons.insert(evidence.comparisons.end(), trace.comparisons.begin(), trace.comparisons.end());
    }
    return evidence;
}

}  // namespace epochcast::cli
