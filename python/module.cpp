// `epochcast._epochcast`, the native half of the Python module (pybind11): the CLI's subcommands run
// in process, each answer the JSON its --json prints and each error the exception of its one-line
// message (cli/output.hpp's describe_error), and a sweep's rows as columns, written cell by cell
// from the description the CSV is written from (cli/sweep_row.hpp). python/epochcast/ is the API
// over it (docs/python.md); nothing here prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cli/app.hpp"
#include "cli/output.hpp"
#include "cli/sweep.hpp"
#include "cli/sweep_row.hpp"
#include "model/catalog.hpp"
#include "model/errors.hpp"
#include "model/scenario_file.hpp"
#include "model/sweep.hpp"

namespace py = pybind11;

namespace epochcast::python {
namespace {

PyObject* g_input_error = nullptr;       // epochcast.InputError, a ValueError
PyObject* g_infeasible_error = nullptr;  // epochcast.InfeasibleError, an InputError
PyObject* g_run_error = nullptr;         // epochcast.RunError, a RuntimeError

/// Text from C++ as a Python str; bytes that are not UTF-8 (a file name) become U+FFFD.
py::str to_str(std::string_view text) {
    PyObject* object = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    if (object == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(object);
}

/// A stream that drops what it is given: a simulation's progress lines, which Python does not print.
class NullBuffer : public std::streambuf {
protected:
    int overflow(int c) override { return traits_type::not_eof(c); }
};

/// `epochcast ARGS` in process: (what it printed, None), or, when plan found nothing within the
/// deadline or budget (the CLI's exit code 3), (what it printed, the line it says so with). Bad
/// input raises InputError, a failed run RunError, each with the CLI's message.
py::tuple run(const std::vector<std::string>& args) {
    std::ostringstream out;
    NullBuffer null_buffer;
    std::ostream progress(&null_buffer);
    std::optional<std::string> no_answer;
    {
        py::gil_scoped_release release;
        try {
            cli::run(args, out, progress);
        } catch (const cli::NoAnswer&) {
            no_answer = cli::describe_error(std::current_exception()).message;
        }
    }
    return py::make_tuple(to_str(out.str()), no_answer ? py::object(to_str(*no_answer)) : py::none());
}

/// A subcommand's options, as dicts (cli::OptionInfo's fields).
py::list options(const std::string& subcommand) {
    py::list list;
    for (const cli::OptionInfo& o : cli::subcommand_options(subcommand)) {
        py::dict option;
        option["name"] = o.name;
        option["positional"] = o.positional;
        option["flag"] = o.flag;
        option["repeatable"] = o.repeatable;
        option["required"] = o.required;
        option["kind"] = o.value_kind;
        option["default"] = to_str(o.default_text);
        option["help"] = to_str(o.help);
        list.append(option);
    }
    return list;
}

// ---- the sweep as columns ---------------------------------------------------------------------

/// n values, left uninitialised: every row writes each of its cells (a page is first touched by
/// the thread that evaluates its rows).
template <typename T>
struct Array {
    std::unique_ptr<T[]> values;
    std::size_t size = 0;
    void allocate(std::size_t n) {
        values = std::make_unique_for_overwrite<T[]>(n);
        size = n;
    }
    T& operator[](std::size_t i) { return values[i]; }
};

/// One column's values: the array its type uses, one element a row.
struct ColumnData {
    cli::ColumnType type = cli::ColumnType::number;
    Array<double> numbers;       ///< number: NaN for none
    Array<std::int64_t> counts;  ///< count: 0 for none
    Array<std::uint8_t> given;   ///< count: 0 for none, else 1
    Array<std::int32_t> codes;   ///< text: the index of its value in `categories`, -1 for none
    Array<std::int8_t> flags;    ///< flag: 1 true, 0 false, -1 none
    std::vector<std::string> categories;
};

/// A flat array of one of ColumnData's arrays, which Python reads through the buffer protocol
/// (numpy.frombuffer without a copy, memoryview.tolist without numpy); it keeps the column alive.
struct Buffer {
    std::shared_ptr<ColumnData> owner;
    void* data = nullptr;
    py::ssize_t size = 0;
    py::ssize_t itemsize = 0;
    std::string format;  ///< struct's letter: d, q, B, i, b
};

template <typename T>
Buffer buffer_of(const std::shared_ptr<ColumnData>& owner, Array<T>& array) {
    return {owner, array.values.get(), static_cast<py::ssize_t>(array.size), sizeof(T),
            py::format_descriptor<T>::format()};
}

/// The distinct values of a text column and their codes, in order of first appearance.
class Dictionary {
public:
    std::int32_t code(std::string_view value) {
        if (last_ >= 0 && values_[static_cast<std::size_t>(last_)] == value) return last_;  // rows repeat values
        auto found = index_.find(value);
        if (found == index_.end()) {
            found = index_.emplace(std::string(value), static_cast<std::int32_t>(values_.size())).first;
            values_.emplace_back(value);
        }
        return last_ = found->second;
    }
    const std::vector<std::string>& values() const { return values_; }
    std::vector<std::string> take() { return std::move(values_); }

private:
    std::vector<std::string> values_;
    std::unordered_map<std::string, std::int32_t, CatalogNameHash, std::equal_to<>> index_;  // looked up by view
    std::int32_t last_ = -1;
};

/// A chunk of rows written straight into the columns; its text columns' codes index the chunk's own
/// dictionaries until the calling thread renumbers them into the column's.
struct ColumnChunk {
    std::size_t first = 0;
    std::size_t last = 0;
    std::vector<Dictionary> dictionaries;  ///< one per column (used by the text columns)
};

/// Writes one row's cells (cli/sweep_row.hpp) into row `row` of the columns.
struct ColumnCells {
    std::vector<std::shared_ptr<ColumnData>>& columns;
    std::vector<Dictionary>& dictionaries;
    std::size_t row;
    std::size_t k = 0;

    void text(std::string_view value) {
        columns[k]->codes[row] = dictionaries[k].code(value);
        ++k;
    }
    void count(std::int64_t value) {
        columns[k]->counts[row] = value;
        columns[k]->given[row] = 1;
        ++k;
    }
    void number(double value) { columns[k++]->numbers[row] = value; }
    void flag(bool value) { columns[k++]->flags[row] = value ? 1 : 0; }
    void none() {
        ColumnData& c = *columns[k++];
        switch (c.type) {
            case cli::ColumnType::text:
                c.codes[row] = -1;
                break;
            case cli::ColumnType::count:
                c.counts[row] = 0;
                c.given[row] = 0;
                break;
            case cli::ColumnType::number:
                c.numbers[row] = std::numeric_limits<double>::quiet_NaN();
                break;
            case cli::ColumnType::flag:
                c.flags[row] = -1;
                break;
        }
    }
};

const char* type_name(cli::ColumnType type) {
    switch (type) {
        case cli::ColumnType::text:
            return "text";
        case cli::ColumnType::count:
            return "count";
        case cli::ColumnType::number:
            return "number";
        case cli::ColumnType::flag:
            return "flag";
    }
    return "?";
}

/// `epochcast sweep ARGS` (spec_text: the spec itself, which the SPEC argument names) as columns:
/// (rows, [(name, type, values, given or None, categories or None), ...]) in the CSV's order. Types:
/// "number" (float64 values, NaN for none), "count" (int64 values, uint8 given), "flag" (int8: 1,
/// 0, -1 for none), "text" (int32 codes into categories, -1 for none). Ctrl-C stops it between
/// chunks of rows with KeyboardInterrupt.
py::tuple sweep_columns(const std::vector<std::string>& args, const std::optional<std::string>& spec_text) {
    constexpr auto kAllColumns = cli::sweep_columns();
    std::vector<cli::SweepColumn> kColumns;  // the selected ones (--columns), in the full set's order
    std::vector<std::shared_ptr<ColumnData>> columns;
    std::size_t rows = 0;
    bool interrupted = false;
    {
        py::gil_scoped_release release;
        const cli::PreparedSweep sweep = cli::prepare_sweep(args, spec_text);
        rows = sweep.spec.combinations();
        cli::check_simulated_work(sweep, {0, rows});
        for (std::size_t k = 0; k < kAllColumns.size(); ++k) {
            if (sweep.columns[k]) kColumns.push_back(kAllColumns[k]);
        }
        for (const cli::SweepColumn& column : kColumns) {
            auto data = std::make_shared<ColumnData>();
            data->type = column.type;
            switch (column.type) {
                case cli::ColumnType::text:
                    data->codes.allocate(rows);
                    break;
                case cli::ColumnType::count:
                    data->counts.allocate(rows);
                    data->given.allocate(rows);
                    break;
                case cli::ColumnType::number:
                    data->numbers.allocate(rows);
                    break;
                case cli::ColumnType::flag:
                    data->flags.allocate(rows);
                    break;
            }
            columns.push_back(std::move(data));
        }
        std::vector<Dictionary> dictionaries(kColumns.size());  // each text column's, over every chunk
        const cli::SweepEvaluator evaluator(sweep);
        interrupted = cli::evaluate_range(
            {0, rows}, sweep.jobs, sweep.chunk_rows,
            [&](std::size_t first, std::size_t last) {
                ColumnChunk chunk{first, last, std::vector<Dictionary>(kColumns.size())};
                cli::ScenarioResult result;
                std::string reason;
                for (std::size_t i = first; i < last; ++i) {
                    ColumnCells inner{columns, chunk.dictionaries, i};
                    cli::SelectedCells<ColumnCells> cells{inner, sweep.columns};
                    if (evaluator.evaluate(i, result, reason)) {
                        cli::feasible_row(result, cells);
                    } else {
                        cli::infeasible_row(result.scenario, reason, cells);
                    }
                }
                return chunk;
            },
            [&](ColumnChunk& chunk) {
                for (std::size_t k = 0; k < kColumns.size(); ++k) {
                    if (kColumns[k].type != cli::ColumnType::text) continue;
                    std::vector<std::int32_t> renumbered;
                    for (const std::string& value : chunk.dictionaries[k].values())
                        renumbered.push_back(dictionaries[k].code(value));
                    Array<std::int32_t>& codes = columns[k]->codes;
                    for (std::size_t i = chunk.first; i < chunk.last; ++i) {
                        if (codes[i] >= 0) codes[i] = renumbered[static_cast<std::size_t>(codes[i])];
                    }
                }
            },
            [] {
                py::gil_scoped_acquire acquire;
                return PyErr_CheckSignals() != 0;  // Ctrl-C: KeyboardInterrupt is set
            });
        for (std::size_t k = 0; k < kColumns.size(); ++k) columns[k]->categories = dictionaries[k].take();
    }
    if (interrupted) throw py::error_already_set();

    py::list described;
    for (std::size_t k = 0; k < kColumns.size(); ++k) {
        const std::shared_ptr<ColumnData>& c = columns[k];
        py::object values;
        py::object given = py::none();
        py::object categories = py::none();
        switch (c->type) {
            case cli::ColumnType::text: {
                values = py::cast(buffer_of(c, c->codes));
                py::list names;
                for (const std::string& name : c->categories) names.append(to_str(name));
                categories = names;
                break;
            }
            case cli::ColumnType::count:
                values = py::cast(buffer_of(c, c->counts));
                given = py::cast(buffer_of(c, c->given));
                break;
            case cli::ColumnType::number:
                values = py::cast(buffer_of(c, c->numbers));
                break;
            case cli::ColumnType::flag:
                values = py::cast(buffer_of(c, c->flags));
                break;
        }
        described.append(py::make_tuple(std::string(kColumns[k].name), type_name(c->type), values, given, categories));
    }
    return py::make_tuple(rows, described);
}

/// A scenario file's text read as `predict --scenario` reads it, with the --catalog files given:
/// for each configuration (name, the predict flags that give it, its keys as the file writes them,
/// without "schema"). A bad file raises InputError with the CLI's message.
py::list scenario_file(const std::string& text, const std::vector<std::string>& catalogs) {
    std::vector<std::tuple<std::string, std::string, std::string>> read;
    {
        py::gil_scoped_release release;
        const Catalog catalog = load_catalog(catalogs);
        for (const NamedScenario& s : parse_scenario_file(text, "scenario", catalog)) {
            read.emplace_back(s.name, scenario_flags(s.scenario), scenario_file_json({{"", s.scenario}}));
        }
    }
    py::list out;
    for (const auto& [name, flags, json] : read) out.append(py::make_tuple(to_str(name), to_str(flags), to_str(json)));
    return out;
}

/// The keys a scenario file takes besides "schema" and "name" (the sweep spec's, then target_top1, recipe).
py::list scenario_keys() {
    py::list out;
    for (std::string_view key : kSweepFields) out.append(std::string(key));
    out.append("target_top1");
    out.append("recipe");
    return out;
}

}  // namespace
}  // namespace epochcast::python

PYBIND11_MODULE(_epochcast, m) {
    using namespace epochcast::python;
    m.doc() = "The native half of the epochcast module: the CLI in process (python/module.cpp).";
    m.attr("version") = EPOCHCAST_VERSION;

    // The module keeps a reference to each type; the handles are borrowed from it.
    g_input_error = py::exception<epochcast::InputError>(m, "InputError", PyExc_ValueError).ptr();
    g_infeasible_error = py::exception<epochcast::InfeasibleError>(m, "InfeasibleError", g_input_error).ptr();
    g_run_error = py::exception<epochcast::RunError>(m, "RunError", PyExc_RuntimeError).ptr();
    py::register_exception_translator([](std::exception_ptr error) {
        if (!error) return;
        try {
            std::rethrow_exception(error);
        } catch (const epochcast::InfeasibleError&) {
            PyErr_SetObject(g_infeasible_error, to_str(epochcast::cli::describe_error(error).message).ptr());
        } catch (const epochcast::InputError&) {
            PyErr_SetObject(g_input_error, to_str(epochcast::cli::describe_error(error).message).ptr());
        } catch (const epochcast::RunError&) {
            PyErr_SetObject(g_run_error, to_str(epochcast::cli::describe_error(error).message).ptr());
        }
    });

    py::class_<Buffer>(m, "_Buffer", py::buffer_protocol()).def_buffer([](Buffer& b) {
        return py::buffer_info(b.data, b.itemsize, b.format, 1, {b.size}, {b.itemsize});
    });
    m.def("run", &run, py::arg("args"), "epochcast ARGS in process: (stdout, None or plan's unmet line)");
    m.def("options", &options, py::arg("subcommand"), "A subcommand's options, as --help lists them");
    m.def("scenario_file", &scenario_file, py::arg("text"), py::arg("catalogs") = std::vector<std::string>{},
          "A scenario file's configurations as [(name, predict flags, keys as JSON)]");
    m.def("scenario_keys", &scenario_keys, "The keys a scenario file takes besides schema and name");
    m.def("sweep_columns", &sweep_columns, py::arg("args"), py::arg("spec_text") = py::none(),
          "epochcast sweep ARGS as (rows, columns)");
}
