// `epochcast compare A.json B.json ...`: the configurations of scenario files (model/scenario_file.hpp)
// side by side, one column each, every figure with its 95% band, and how each differs from the
// first (in percent; for the cost, also in dollars). --json prints each configuration's
// prediction as predict --json does, with its label and the differences.
#include <CLI/CLI.hpp>

#include <cmath>
#include <memory>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "cli/report.hpp"
#include "cli/table.hpp"
#include "model/cost_model.hpp"
#include "model/errors.hpp"
#include "model/scenario_file.hpp"
#include "model/text_io.hpp"

namespace epochcast::cli {
namespace {

struct CompareOptions {
    std::vector<std::string> files;
    std::vector<std::string> catalogs;
    std::string calibration = "built-in";
    bool json = false;
};

struct Compared {
    std::string label;  ///< the scenario's name, else its file (and its index in a list)
    ScenarioResult result;
};

/// "+12.3 %" of `value` against `reference`; "" where the reference is zero.
std::string difference_text(double value, double reference) {
    if (!(reference != 0)) return "";
    return format_signed_percent(100.0 * (value / reference - 1.0));
}

/// One row of the table: what it shows of a prediction, as text and as the number compared.
struct Figure {
    std::string name;
    std::string (*text)(const Prediction&);  ///< null: the memory row (memory_text, which needs the model)
    double (*value)(const Prediction&);      ///< null: not compared in percent
    bool money = false;                      ///< compared only where both configurations are priced
};

std::string band(const Interval& interval, std::string (*format)(double)) {
    return " (" + format(interval.low) + " - " + format(interval.high) + ")";
}

std::string count_text(double value) { return format_count(value); }
std::string duration_text(double value) { return format_duration(value); }
std::string dollars_text(double value) { return format_dollars(value); }

const std::vector<Figure>& figures() {
    static const std::vector<Figure> rows = {
        {"cluster",
         [](const Prediction& p) {
             return format_count(p.nodes) + (p.nodes == 1 ? " node, " : " nodes, ") + format_count(p.gpus) + " GPUs";
         },
         [](const Prediction& p) { return static_cast<double>(p.gpus); }},
        {"global batch", [](const Prediction& p) { return format_count(p.global_batch); },
         [](const Prediction& p) { return static_cast<double>(p.global_batch); }},
        {"throughput (img/s, 95%)",
         [](const Prediction& p) { return format_count(p.throughput_images_per_s) + band(p.interval, count_text); },
         [](const Prediction& p) { return p.throughput_images_per_s; }},
        {"per GPU (img/s)", [](const Prediction& p) { return format_count(p.per_gpu_images_per_s); },
         [](const Prediction& p) { return p.per_gpu_images_per_s; }},
        {"bottleneck", [](const Prediction& p) { return bottleneck_text(p); }, nullptr},
        {"exposed communication (ms/iteration)",
         [](const Prediction& p) { return format_number(p.exposed_communication_s * 1e3, 1); },
         [](const Prediction& p) { return p.exposed_communication_s; }},
        {"epochs", [](const Prediction& p) { return format_number(p.epochs, 1); },
         [](const Prediction& p) { return p.epochs; }},
        {"epoch time", [](const Prediction& p) { return format_duration(p.epoch_s); },
         [](const Prediction& p) { return p.epoch_s; }},
        {"time to train (95%)",
         [](const Prediction& p) {
             return format_duration(p.time_to_train_s) + band(p.time_to_train_interval, duration_text);
         },
         [](const Prediction& p) { return p.time_to_train_s; }},
        {"cluster $/h",
         [](const Prediction& p) {
             return p.priced ? format_dollars(p.cluster_usd_per_hour) : std::string("no price");
         },
         [](const Prediction& p) { return p.cluster_usd_per_hour; }, true},
        {"bill (95%)",
         [](const Prediction& p) {
             return p.priced ? format_dollars(p.bill_usd) + band(p.bill_interval, dollars_text)
                             : std::string("no price");
         },
         [](const Prediction& p) { return p.bill_usd; }, true},
        {"memory per GPU (GiB)", nullptr, [](const Prediction& p) { return p.memory_per_gpu_GiB; }},
    };
    return rows;
}

class CompareReport : public Report {
public:
    CompareReport(const CostModel& model, std::vector<Compared> compared)
        : model_(model), compared_(std::move(compared)) {}

    void print_text(std::ostream& out, bool markdown) const override {
        std::vector<std::string> header{"figure"};
        for (const Compared& c : compared_) header.push_back(c.label);
        for (std::size_t i = 1; i < compared_.size(); ++i)
            header.push_back(compared_[i].label + " vs " + compared_[0].label);
        Table table(header);
        for (const Figure& f : figures()) {
            std::vector<std::string> row{f.name};
            for (const Compared& c : compared_) {
                row.push_back(f.text ? f.text(c.result.prediction)
                                     : memory_text(model_, c.result.scenario, c.result.prediction));
            }
            for (std::size_t i = 1; i < compared_.size(); ++i) {
                const Prediction& a = compared_[0].result.prediction;
                const Prediction& b = compared_[i].result.prediction;
                std::string diff;
                if (f.value && (!f.money || (a.priced && b.priced))) diff = difference_text(f.value(b), f.value(a));
                if (f.money && f.name.starts_with("bill") && a.priced && b.priced) {
                    const double usd = b.bill_usd - a.bill_usd;
                    diff +=
                        (diff.empty() ? "" : ", ") + std::string(usd >= 0 ? "+" : "-") + format_dollars(std::fabs(usd));
                }
                row.push_back(diff);
            }
            table.add_row(row);
        }
        if (markdown) {
            table.print_markdown(out);
        } else {
            table.print(out);
        }
    }

    void print_json(std::ostream& out) const override {
        nlohmann::json list = nlohmann::json::array();
        for (const Compared& c : compared_) {
            nlohmann::json entry = prediction_json(c.result);
            entry["label"] = c.label;
            list.push_back(entry);
        }
        print_json_document(list, out);
    }

private:
    const CostModel& model_;
    std::vector<Compared> compared_;
};

void run_compare(const CompareOptions& o, std::ostream& out) {
    const CostModel model(load_catalog(o.catalogs), load_calibration(o.calibration));
    std::vector<Compared> compared;
    for (const std::string& file : o.files) {
        const std::vector<NamedScenario> scenarios = read_scenario_file(file, model.catalog());
        for (std::size_t i = 0; i < scenarios.size(); ++i) {
            std::string label = scenarios[i].name;
            if (label.empty()) label = scenarios.size() == 1 ? file : file + "#" + std::to_string(i);
            const ResolvedScenario resolved = model.resolve(scenarios[i].scenario);
            compared.push_back(
                {label, {scenarios[i].scenario, model.checked_predict(resolved), resolved.curve_origin}});
        }
    }
    if (compared.size() < 2) {
        throw InputError("compare: " + std::to_string(compared.size()) +
                         " configuration in the files; it takes two or more (a file may hold a \"scenarios\" list)");
    }
    write_report(CompareReport(model, std::move(compared)), output_format(o.json), out);
}

}  // namespace

void register_compare(CLI::App& app, std::ostream& out) {
    auto options = std::make_shared<CompareOptions>();
    CLI::App* cmd = app.add_subcommand(
        "compare",
        "Predict the configurations of scenario files (epochcast.scenario/1) side by side: each figure with its 95% "
        "band, and each configuration's difference from the first");
    cmd->add_option("files", options->files, "Scenario files; each holds one configuration or a \"scenarios\" list")
        ->required();
    add_catalog_option(*cmd, options->catalogs);
    add_calibration_option(*cmd, options->calibration);
    add_json_flag(*cmd, options->json, "a JSON list of the predictions, each with its \"label\"");
    cmd->callback([options, &out] { run_compare(*options, out); });
}

}  // namespace epochcast::cli
