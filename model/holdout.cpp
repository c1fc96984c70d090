#include "model/holdout.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace epochcast {

std::vector<Prediction> leave_one_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                  const std::vector<NetworkObservation>& networks,
                                                  const FitOptions& options) {
    std::vector<Prediction> predictions;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        std::vector<Observation> others = runs;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
        const CalibrationFit fit = fit_calibration(prior, others, networks, {}, options);
        const CostModel model(prior, fit.calibration);
        predictions.push_back(model.predict(runs[i].scenario));
    }
    return predictions;
}

std::string system_of(const Scenario& s) {
    return s.instance + " " + std::string(to_string(s.framework)) + " " + std::string(to_string(s.precision)) + " " +
           std::string(to_string(s.stack));
}

namespace {

/// The comparisons that involve none of `system`'s configurations.
std::vector<Comparison> comparisons_without(const std::vector<Comparison>& comparisons, const std::string& system) {
    std::vector<Comparison> kept;
    for (const Comparison& c : comparisons) {
        if (system_of(c.scenario) != system && system_of(c.baseline) != system) kept.push_back(c);
    }
    return kept;
}

/// One run of a held-out group and its size: GPUs, then the per-GPU batch.
struct SizedRun {
    std::size_t index = 0;
    std::pair<int, int> size;
};

/// The runs whose group (`group_of`, one per run) is `group`, smallest first (fewest GPUs, then
/// smallest batch, then file order); each run resolved once.
std::vector<SizedRun> runs_of(const CostModel& model, const std::vector<Observation>& runs,
                              const std::vector<std::string>& group_of, const std::string& group) {
    std::vector<SizedRun> mine;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (group_of[i] != group) continue;
        const ResolvedScenario r = model.resolve(runs[i].scenario);
        mine.push_back({i, {r.nodes * r.gpus_per_node, r.batch_per_gpu}});
    }
    std::stable_sort(mine.begin(), mine.end(), [](const SizedRun& a, const SizedRun& b) { return a.size < b.size; });
    return mine;
}

}  // namespace

std::string campaign_of(const Observation& run) {
    if (!run.campaign.empty()) return run.campaign;
    return run.origin.substr(0, run.origin.rfind('#'));
}

std::string held_out_group(const Observation& run, HoldOut mode) {
    switch (mode) {
        case HoldOut::run:
            return run.origin;
        case HoldOut::system:
            return system_of(run.scenario);
        case HoldOut::two_runs:
            return system_of(run.scenario) + " (" + campaign_of(run) + ")";
    }
    return run.origin;
}

std::vector<HeldOutPrediction> held_out_predictions(const CostModel& prior, const std::vector<Observation>& runs,
                                                    const std::vector<NetworkObservation>& networks,
                                                    const std::vector<Comparison>& comparisons, HoldOut mode,
                                                    const FitOptions& options) {
    std::vector<HeldOutPrediction> out(runs.size());
    std::vector<std::string> group_of;
    for (const Observation& run : runs) group_of.push_back(held_out_group(run, mode));
    if (mode == HoldOut::run) {
        const std::vector<Prediction> predictions = leave_one_out_predictions(prior, runs, networks, options);
        for (std::size_t i = 0; i < runs.size(); ++i) out[i] = {predictions[i], false, true, group_of[i]};
        return out;
    }
    std::vector<std::string> groups;
    for (const std::string& group : group_of) {
        if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
    }
    for (const std::string& group : groups) {
        const std::vector<SizedRun> mine = runs_of(prior, runs, group_of, group);
        if (mode == HoldOut::two_runs && mine.size() < 3) continue;  // nothing left to predict
        std::vector<Observation> others;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            if (group_of[i] != group) others.push_back(runs[i]);
        }
        // A comparison involving the group's instance, framework, precision and stack is held out
        // with it, whatever its campaign.
        const std::string system = system_of(runs[mine[0].index].scenario);
        // With nothing else to fit, the prior alone stands for the rest of the corpus.
        std::optional<CostModel> model;
        if (others.empty() && networks.empty()) {
            model.emplace(prior, prior.calibration());
        } else {
            model.emplace(prior,
                          fit_calibration(prior, others, networks, comparisons_without(comparisons, system), options)
                              .calibration);
        }
        std::vector<std::size_t> calibration_runs;
        if (mode == HoldOut::two_runs) {
            // The smallest run, and the next smallest on more GPUs (a second GPU count tells the
            // fit how the system scales: a user benchmarks one GPU and a node), else the next
            // smallest of another batch, else the next smallest.
            calibration_runs.push_back(mine[0].index);
            auto next_where = [&](auto differs) -> std::optional<std::size_t> {
                for (std::size_t k = 1; k < mine.size(); ++k) {
                    if (differs(mine[k])) return mine[k].index;
                }
                return std::nullopt;
            };
            const std::size_t second = next_where([&](const SizedRun& r) {
                                           return r.size.first != mine[0].size.first;
                                       }).value_or(next_where([&](const SizedRun& r) {
                                                       return r.size != mine[0].size;
                                                   }).value_or(mine[1].index));
            calibration_runs.push_back(second);
            const CalibrationFit own =
                fit_calibration(*model, {runs[calibration_runs[0]], runs[calibration_runs[1]]}, {}, {}, options);
            model.emplace(prior, own.calibration);
        }
        for (const SizedRun& run : mine) {
            const std::size_t i = run.index;
            const bool used = std::find(calibration_runs.begin(), calibration_runs.end(), i) != calibration_runs.end();
            out[i] = {model->predict(runs[i].scenario), used, true, group};
        }
    }
    return out;
}

}  // namespace epochcast
