"""epochcast from Python: what a ResNet training run on rented GPUs will cost and how long it will
take, for notebooks and pipelines (docs/python.md).

    >>> import epochcast
    >>> p = epochcast.predict(instance="p5.48xlarge", nodes=4)
    >>> p.time_to_train_s, p.cost_usd

Each function is a subcommand of the ``epochcast`` command line run in this process, over the same
C++ model: its flags are keyword arguments (``--batch-per-gpu 512`` is ``batch_per_gpu=512``) with
the same defaults, its answer is what ``--json`` prints (keys with their units in their names), a
value of the wrong type raises TypeError, and bad input raises InputError, a ValueError, with the
one line the command prints for the same input (after ``epochcast: error:``), its flags named as
keywords (``--batch-per-gpu`` as ``batch_per_gpu=``). Nothing prints.
"""

import copy
import datetime
import functools
import json
import numbers
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Mapping

from . import _epochcast as _native
from ._epochcast import InfeasibleError, InputError, RunError

__version__ = _native.version
__all__ = [
    "predict",
    "sweep",
    "plan",
    "calibrate",
    "validate",
    "catalog",
    "simulate",
    "compare",
    "Scenario",
    "write_scenarios",
    "Record",
    "Prediction",
    "Plan",
    "Calibration",
    "Simulation",
    "InputError",
    "InfeasibleError",
    "RunError",
]

for _error in (InputError, InfeasibleError, RunError):
    _error.__module__ = __name__

# Flags the module sets itself: the answer is always JSON, outputs come back as values.
_SET_BY_THE_MODULE = {"json", "markdown", "output"}
# The flags that take a JSON document, which a dict is written to a file for.
_DOCUMENT_FLAGS = {"catalog", "calibration", "prior", "elastic"}


# ---- answers ----------------------------------------------------------------------------------


class Record:
    """A JSON object epochcast answered with: its keys are attributes (``p.cost_usd``) and items
    (``p["cost_usd"]``); nested objects are Records too. ``to_dict()`` gives the JSON as plain
    Python values (null is None)."""

    __slots__ = ("_data",)
    _kinds = {}  # key: the Record class its object (or list of objects) is

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, key):
        data = object.__getattribute__(self, "_data")
        if key not in data:
            raise AttributeError(f"{type(self).__name__} has no key {key!r}; its keys are {', '.join(data)}")
        return self._wrap(key, data[key])

    def __getitem__(self, key):
        return self._wrap(key, self._data[key])

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is read-only; to_dict() gives a copy to change")

    def _wrap(self, key, value):
        kind = self._kinds.get(key, Record)
        if isinstance(value, dict):
            return kind(value)
        if isinstance(value, list):
            return [kind(v) if isinstance(v, dict) else v for v in value]
        return value

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def keys(self):
        return self._data.keys()

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def __eq__(self, other):
        return isinstance(other, Record) and self._data == other._data

    __hash__ = None

    def to_dict(self):
        """The JSON object as plain dicts, lists, numbers, strings and None (a copy)."""
        return copy.deepcopy(self._data)

    def __repr__(self):
        return f"{type(self).__name__}({self._data!r})"


def _figure(value):
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


class _Band(str):
    """A figure with its 95% band, as a repr shows it: 75280.1 (68494.3-82738.1)."""


def _banded(value, band):
    if value is None or not isinstance(band, Mapping) or band.get("low") is None:
        return value
    return _Band(f"{_figure(value)} ({_figure(band['low'])}-{_figure(band['high'])})")


class Prediction(Record):
    """What the model says about one scenario: the keys of ``epochcast predict --json``
    (docs/cli.md, "predict"): ``throughput_images_per_s``, ``epoch_s``, ``time_to_train_s``,
    ``cost_usd`` (None for a machine without a price by the hour), ``bill_usd`` (what is paid: a
    Capacity Block's whole days or a reservation's term, where ``cost_usd`` is the run's share;
    the same by the second), their bands (``interval``, ``time_to_train_interval``,
    ``cost_interval``, ``bill_interval``), the breakdown of an iteration, and ``scenario``,
    the scenario echoed with what was resolved (GPUs per node, the per-GPU batch)."""

    __slots__ = ()

    def __repr__(self):
        d = self._data
        s = d.get("scenario", {})
        shown = {
            "instance": s.get("instance"),
            "nodes": s.get("nodes"),
            "gpus": d.get("gpus"),
            "strategy": s.get("strategy"),
            "precision": s.get("precision"),
            "batch_per_gpu": s.get("batch_per_gpu"),
            "throughput_images_per_s": _banded(d.get("throughput_images_per_s"), d.get("interval")),
            "epoch_s": d.get("epoch_s"),
            "time_to_train_s": _banded(d.get("time_to_train_s"), d.get("time_to_train_interval")),
            "cost_usd": _banded(d.get("cost_usd"), d.get("cost_interval")),
            "bottleneck": d.get("bottleneck"),
        }
        return f"{type(self).__name__}({', '.join(f'{k}={v if isinstance(v, _Band) else _figure(v)}' for k, v in shown.items())})"


class Plan(Record):
    """What ``epochcast plan --json`` answers (docs/cli.md, "plan"): the picks
    ``cheapest_within_deadline`` and ``fastest_within_budget`` (each a Prediction with
    ``at_confidence``, or None), ``front``, the Pareto front of time against cost from the fastest
    to the cheapest, ``unpriced`` (the instances without a price set apart, their plans' count and
    the fastest of them), what the plans were ranked by (``ranked_by``: ``"bill"``, or
    ``"share"`` with ``rank_by="share"``), and what was searched. ``unmet`` is the line the command prints when no
    configuration meets the deadline or the budget (its exit code 3), else None."""

    __slots__ = ("unmet",)
    _kinds = {"cheapest_within_deadline": Prediction, "fastest_within_budget": Prediction, "front": Prediction}

    def __init__(self, data, unmet=None):
        super().__init__(data)
        object.__setattr__(self, "unmet", unmet)

    def __repr__(self):
        picks = {k: self._data.get(k) for k in ("cheapest_within_deadline", "fastest_within_budget")}
        text = ", ".join(f"{k}={Prediction(v)!r}" if v else f"{k}=None" for k, v in picks.items())
        return f"Plan({text}, front=[{len(self._data.get('front', []))} plans], unmet={self.unmet!r})"


class Calibration(Record):
    """A calibration (``epochcast.calibration/1``, docs/formats.md) that ``calibrate()`` fitted:
    pass it as ``calibration=`` (or ``prior=``) to the other functions, or write it with
    ``write(path)``, the file ``epochcast calibrate -o`` writes, byte for byte."""

    __slots__ = ("text",)

    def __init__(self, text):
        super().__init__(json.loads(text))
        object.__setattr__(self, "text", text)

    def write(self, path):
        """Write the calibration file to ``path``."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.text)

    def __repr__(self):
        fitted = self._data.get("fitted_from", [])
        return f"Calibration(fitted to {len(fitted)} runs: {', '.join(fitted[:4])}{', ...' if len(fitted) > 4 else ''})"


class Simulation(Prediction):
    """``epochcast simulate --json``: a Prediction from simulated iterations, with
    ``iteration_distribution``, ``simulation`` and the closed form's ``analytic`` figures."""

    __slots__ = ()


class Scenario:
    """One configuration kept as a scenario file (``epochcast.scenario/1``, docs/formats.md,
    "Scenario"): the sweep spec's keys, each one value, with ``target_top1``, ``recipe`` and a
    ``name``. ``Scenario(instance="p5.48xlarge", nodes=4)`` is checked as the command line checks the
    file (TypeError for a key it does not take or a list, ValueError for a value it refuses);
    ``Scenario.read(path)`` gives a file's (a list where it holds a "scenarios" list), ``write(path)``
    writes one (``write_scenarios`` several), ``predict()`` predicts it and ``command()`` is the
    ``epochcast predict`` line that gives it. Its keys are those the file would hold, defaults
    written where ``predict --save-scenario`` writes them."""

    __slots__ = ("_keys", "_flags")

    def __init__(self, name=None, *, catalog=None, **keys):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Scenario() name= must be a str, not {type(name).__name__}")
        known = _native.scenario_keys()
        for key, value in keys.items():
            if key not in known:
                raise TypeError(f"Scenario() got an unexpected keyword argument {key!r}; it takes name, "
                                + ", ".join(known))
            if isinstance(value, (list, tuple, set, Mapping)):
                raise TypeError(f"Scenario() {key}= takes one value, not a {type(value).__name__}: a scenario is one "
                                "configuration (sweep() takes lists)")
        document = {"schema": "epochcast.scenario/1"}
        if name:
            document["name"] = name
        for key, value in keys.items():
            if value is not None:
                document[key] = f"{value.total_seconds()!r}s" if isinstance(value, datetime.timedelta) else value
        (read,) = _read_scenarios(json.dumps(document), catalog)
        self._set(*read)

    def _set(self, name, flags, text):
        keys = json.loads(text)
        keys.pop("schema", None)
        if name:
            keys = {"name": name, **keys}
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_flags", flags)

    @classmethod
    def _of(cls, name, flags, text):
        scenario = cls.__new__(cls)
        scenario._set(name, flags, text)
        return scenario

    @classmethod
    def read(cls, path, catalog=None):
        """The configuration of scenario file `path`, or the list of them where it holds a "scenarios" list."""
        with open(path, encoding="utf-8") as file:
            text = file.read()
        scenarios = [cls._of(*read) for read in _read_scenarios(text, catalog)]
        return scenarios if "scenarios" in json.loads(text) else scenarios[0]

    def text(self):
        """The scenario file's text, as ``epochcast predict --save-scenario`` writes it."""
        return json.dumps({"schema": "epochcast.scenario/1", **self._keys}, indent=2, ensure_ascii=False) + "\n"

    def write(self, path):
        """Write the scenario file to `path` (whole, or not at all)."""
        _write_atomically(path, self.text())

    def to_dict(self):
        """The file's keys (without "schema") as a dict (a copy)."""
        return copy.deepcopy(self._keys)

    @property
    def name(self):
        return self._keys.get("name")

    def __getattr__(self, key):
        keys = object.__getattribute__(self, "_keys")
        if key in keys:
            return keys[key]
        raise AttributeError(f"Scenario has no key {key!r} (a key at its default is left out); its keys are "
                             + ", ".join(keys))

    def __setattr__(self, key, value):
        raise AttributeError("Scenario is read-only; Scenario(**{**s.to_dict(), key: value}) makes a changed one")

    def command(self):
        """The ``epochcast predict`` line that gives this configuration."""
        return "epochcast predict " + self._flags

    def predict(self, **options):
        """``predict(scenario=self, **options)``: a Prediction."""
        return predict(scenario=self, **options)

    def __eq__(self, other):
        return isinstance(other, Scenario) and self._keys == other._keys

    __hash__ = None

    def __repr__(self):
        return f"Scenario({', '.join(f'{k}={v!r}' for k, v in self._keys.items())})"


def _read_scenarios(text, catalog):
    with _Files() as files:
        catalogs = [] if catalog is None else [_text(c, files, "catalog")
                                               for c in (catalog if isinstance(catalog, (list, tuple)) else [catalog])]
        return _native_call(_native.scenario_file, text, catalogs)


def _write_atomically(path, text):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".epochcast-", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_scenarios(path, scenarios):
    """Write `scenarios` (Scenario objects) to `path` as one scenario file with a "scenarios" list,
    which ``compare()``, ``predict(scenario=path)`` and the GUI's Open read."""
    scenarios = list(scenarios)
    for s in scenarios:
        if not isinstance(s, Scenario):
            raise TypeError(f"write_scenarios() takes Scenario objects, not {type(s).__name__}")
    document = {"schema": "epochcast.scenario/1", "scenarios": [s.to_dict() for s in scenarios]}
    _write_atomically(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


# ---- arguments --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _options(subcommand):
    return {o["name"]: o for o in _native.options(subcommand)}


class _Files:
    """Documents given as Python values (a catalog dict, a Calibration, runs as dicts), written to a
    temporary folder for the call's flags to name; the folder goes when the call returns."""

    def __init__(self):
        self._folder = None
        self._count = 0

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        if self._folder is not None:
            self._folder.cleanup()

    def path(self, name):
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="epochcast-")
        return os.path.join(self._folder.name, name)

    def write(self, name, text):
        self._count += 1
        stem, extension = os.path.splitext(name)
        path = self.path(f"{stem}-{self._count}{extension}" if self._count > 1 else name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return path

    def traces(self, runs_or_trace_files):
        """Trace arguments: a path (``FILE#I`` for run I), a whole trace as a dict (its "schema"
        key), or a run as a dict; the runs given as dicts go into one trace, runs.json."""
        if isinstance(runs_or_trace_files, (str, os.PathLike, Mapping)):
            runs_or_trace_files = [runs_or_trace_files]
        arguments, runs = [], []
        for item in runs_or_trace_files:
            if isinstance(item, Mapping) and "schema" in item:
                arguments.append(self.write("trace.json", json.dumps(item)))
            elif isinstance(item, Mapping):
                runs.append(item)
            else:
                arguments.append(os.fspath(item))
        if runs:
            arguments.append(self.write("runs.json", json.dumps({"schema": "epochcast.trace/1", "runs": runs})))
        return arguments


def _text(value, files, name):
    """A keyword's value as the command line would spell flag `name`'s."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.timedelta):
        return f"{value.total_seconds()!r}s"
    if isinstance(value, Calibration):
        return files.write("calibration.json", value.text)
    if isinstance(value, Scenario):
        return files.write("scenario.json", value.text())
    if isinstance(value, Mapping):  # a document: a catalog, a calibration
        if name not in _DOCUMENT_FLAGS:
            # nodes={} was written to a file whose temporary path the error then named.
            raise InputError(f"{name.replace('-', '_')}= takes no dict (a dict is a document: "
                             + ", ".join(f"{flag}=" for flag in sorted(_DOCUMENT_FLAGS)) + ")")
        return files.write(f"{name}.json", json.dumps(value))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _encoded(text, where):
    """`text` as the bytes the command line is given: UTF-8, and the undecodable bytes of a file name
    (which Python holds as lone surrogates U+DC80-U+DCFF, os.fsdecode's "surrogateescape") as they
    were. Any other lone surrogate is no character: an InputError naming `where` (pybind11's
    "incompatible function arguments" said nothing of which argument)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        raise InputError(f"{where} holds a lone surrogate (U+{code:04X}), which is no character: give it as text "
                         "or, for a file name, as os.fsdecode gives it") from None


def _arguments(function, subcommand, keywords, files, positionals=(), leave_out=(), given=()):
    """The command line of ``epochcast SUBCOMMAND`` for `keywords`: each is its flag, underscores for
    dashes (None: left out; a list: the flag once for each item; True: a flag given); then the
    module's own flags `given`, then the positional arguments."""
    options = _options(subcommand)
    arguments = [subcommand]
    for key, value in keywords.items():
        name = key.replace("_", "-")
        option = options.get(name)
        if option is None or option["positional"] or name in _SET_BY_THE_MODULE or name in leave_out:
            raise TypeError(
                f"{function}() got an unexpected keyword argument {key!r}; it takes "
                + ", ".join(_keywords(subcommand, leave_out))
            )
        if value is None:
            continue
        if isinstance(value, (list, tuple)) and not value:
            # An empty list left the flag out: plan(nodes=[]) searched the default node counts.
            raise InputError(f"{key}=[] gives no value; leave {key} out (or None) for the default")
        if isinstance(value, (list, tuple)) and not option["repeatable"]:
            raise TypeError(f"{function}() {key}= takes one value, not a {type(value).__name__}")
        for item in value if isinstance(value, (list, tuple)) else [value]:
            _check_type(function, key, option, item)
            if option["flag"] and item is True:
                arguments.append(f"--{name}")
            elif not (option["flag"] and item is False):
                arguments.append(_encoded(f"--{name}={_text(item, files, name)}", f"{key}="))
    arguments.extend(given)
    if positionals:
        arguments.append("--")
        arguments.extend(_encoded(item, f"{function}()'s file") for item in positionals)
    return [_encoded(a, function) if isinstance(a, str) else a for a in arguments]


def _check_type(function, key, option, item):
    """A TypeError naming the keyword where `item` is not what the flag takes: True or False for a
    flag, a whole number (int) for a count, a number for a figure (bool is neither)."""
    if isinstance(item, Mapping):
        return  # a document, or a dict where none goes: _text says which
    kind = "flag" if option["flag"] else option.get("kind", "text")
    if kind == "flag":
        ok, wanted = isinstance(item, bool), "True or False"
    elif kind == "int":
        ok, wanted = isinstance(item, numbers.Integral) and not isinstance(item, bool), "a whole number (int)"
    elif kind == "float":
        ok, wanted = isinstance(item, numbers.Real) and not isinstance(item, bool), "a number"
    else:
        ok, wanted = not isinstance(item, bool), "text"
    if not ok:
        raise TypeError(f"{function}() {key}= takes {wanted}, not {type(item).__name__} {item!r}")


# A flag the command line names in a message, as a Python caller names it: --batch-per-gpu is
# batch_per_gpu= (the module's own flags, --json and --output, are left as they are).
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _python_words(message):
    return _FLAG.sub(lambda m: m.group(0) if m.group(1) in _SET_BY_THE_MODULE else m.group(1).replace("-", "_") + "=",
                     message)


def _native_call(call, *arguments):
    """`call(*arguments)` of the native half, its InputError's message in Python's words."""
    try:
        return call(*arguments)
    except InputError as error:
        raise type(error)(_python_words(str(error))) from None


def _keywords(subcommand, leave_out=()):
    return [
        o["name"].replace("-", "_")
        for o in _options(subcommand).values()
        if not o["positional"] and o["name"] not in _SET_BY_THE_MODULE and o["name"] not in leave_out
    ]


def _json(arguments):
    text, unmet = _native_call(_native.run, arguments)
    return json.loads(text), unmet


# ---- the subcommands --------------------------------------------------------------------------


def predict(**scenario):
    with _Files() as files:
        given = ["--json"]
        if scenario.get("instance") is None and scenario.get("scenario") is None:
            # One scenario always: with no scenario flag the command compares three set-ups.
            given.append(f"--instance={_options('predict')['instance']['default']}")
        data, _ = _json(_arguments("predict", "predict", scenario, files, given=given))
    return [Prediction(d) for d in data] if isinstance(data, list) else Prediction(data)


def compare(*scenarios, **options):
    """Predict scenarios side by side, as ``epochcast compare``: a list of Predictions, each with its
    ``label`` (the scenario's name, else its file). Each argument is a Scenario or a scenario file's
    path; two configurations at least."""
    with _Files() as files:
        paths = []
        for i, s in enumerate(scenarios):
            if isinstance(s, Scenario):
                paths.append(files.write(f"{s.name or 'scenario-' + str(i + 1)}.json".replace(os.sep, "-"), s.text()))
            elif isinstance(s, (str, os.PathLike)):
                paths.append(os.fspath(s))
            else:
                raise TypeError(f"compare() takes Scenario objects or scenario files' paths, not {type(s).__name__}")
        data, _ = _json(_arguments("compare", "compare", options, files, paths, given=["--json"]))
    return [Prediction(d) for d in data]


def sweep(spec, **options):
    with _Files() as files:
        if isinstance(spec, Mapping):
            name, text = "spec", json.dumps(spec)
        else:
            name, text = os.fspath(spec), None
        arguments = _arguments("sweep", "sweep", options, files, [name], leave_out={"plot"})
        _, columns = _native_call(_native.sweep_columns, arguments[1:], text)
    pandas = _pandas()
    if pandas is None:
        warnings.warn(f"pandas is not installed for this Python ({sys.executable}): sweep() returns a list of dicts, "
                      "one a row (install pandas, Debian's python3-pandas, for a DataFrame)", stacklevel=2)
        return _records(columns)
    return _frame(pandas, columns)


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _frame(pandas, columns):
    """The sweep's columns as a DataFrame, without copying the numbers."""
    import numpy

    data = {}
    for name, kind, values, given, categories in columns:
        if kind == "number":
            data[name] = numpy.frombuffer(values, dtype=numpy.float64)
        elif kind == "count":
            counts = numpy.frombuffer(values, dtype=numpy.int64)
            missing = numpy.frombuffer(given, dtype=numpy.uint8) == 0
            data[name] = pandas.arrays.IntegerArray(counts, missing) if missing.any() else counts
        elif kind == "flag":
            flags = numpy.frombuffer(values, dtype=numpy.int8)
            missing = flags < 0
            data[name] = pandas.arrays.BooleanArray(flags == 1, missing) if missing.any() else flags == 1
        else:
            codes = numpy.frombuffer(values, dtype=numpy.int32)
            data[name] = pandas.Categorical.from_codes(codes, categories=categories)
    return pandas.DataFrame(data, copy=False)


def _records(columns):
    """The sweep's columns as a list of dicts, one a row, None where the CSV field is empty."""
    names, lists = [], []
    for name, kind, values, given, categories in columns:
        items = memoryview(values).tolist()
        if kind == "number":
            items = [None if x != x else x for x in items]
        elif kind == "count":
            items = [x if g else None for x, g in zip(items, memoryview(given).tolist())]
        elif kind == "flag":
            items = [None if x < 0 else x == 1 for x in items]
        else:
            items = [categories[c] if c >= 0 else None for c in items]
        names.append(name)
        lists.append(items)
    return [dict(zip(names, row)) for row in zip(*lists)]


def plan(**options):
    with _Files() as files:
        data, unmet = _json(_arguments("plan", "plan", options, files, given=["--json"]))
    return Plan(data, unmet)


def calibrate(runs_or_trace_files, **options):
    with _Files() as files:
        traces = files.traces(runs_or_trace_files)
        output = files.path("fitted-calibration.json")
        _native_call(_native.run,
                     _arguments("calibrate", "calibrate", options, files, traces, given=[f"--output={output}"]))
        with open(output, encoding="utf-8") as file:
            return Calibration(file.read())


def validate(runs_or_trace_files, **options):
    with _Files() as files:
        traces = files.traces(runs_or_trace_files)
        data, _ = _json(_arguments("validate", "validate", options, files, traces, given=["--json"]))
    return Record(data)


def catalog(**options):
    with _Files() as files:
        data, _ = _json(_arguments("catalog", "catalog", options, files, given=["--json"]))
    return Record(data)


def simulate(**options):
    if not _options("simulate"):  # the subcommand of a build without SimGrid takes no flag
        raise RunError(
            "simulate() needs the SimGrid simulator, which this build of epochcast leaves out (pip install . builds "
            "without it); the module scripts/setup builds into build/python has it (docs/python.md)"
        )
    with _Files() as files:
        data, _ = _json(_arguments("simulate", "simulate", options, files, given=["--json"]))
    return Simulation(data)


# ---- documentation from the command line's own help --------------------------------------------

_SUMMARIES = {
    predict: (
        "predict",
        "Predict one scenario: a Prediction whose keys are `epochcast predict --json`'s. With no scenario keyword,\n"
        "the default scenario (PyTorch on 1 x p5.48xlarge, mixed precision, batch 256 per GPU).",
        (),
    ),
    sweep: (
        "sweep",
        "Predict every combination of a sweep spec (a dict, or the path of a JSON file; docs/formats.md,\n"
        '"Sweep spec"): a pandas DataFrame whose columns are the CSV\'s of `epochcast sweep` (docs/cli.md) when\n'
        "pandas is installed, else a list of dicts; an empty CSV field is None (NaN, <NA>). Numbers keep every\n"
        "digit (the CSV prints 7). Ctrl-C stops it with KeyboardInterrupt.",
        ("plot",),
    ),
    plan: (
        "plan",
        "Search the catalog for the cheapest plan within `deadline` and the fastest within `budget`: a Plan with\n"
        "the picks and the Pareto front (`epochcast plan --json`).",
        (),
    ),
    calibrate: (
        "calibrate",
        "Fit the model to measured runs: a Calibration. `runs_or_trace_files`: trace files (FILE#I for run I),\n"
        "traces as dicts, or runs as dicts (the trace format's run keys, docs/formats.md).",
        (),
    ),
    validate: (
        "validate",
        "Put measured runs beside their predictions: a Record of `epochcast validate --json` (runs, comparisons,\n"
        "networks, the mean absolute percentage error). Traces as calibrate() takes them.",
        (),
    ),
    catalog: ("catalog", "The GPUs and instances known: a Record of the epochcast.catalog/1 JSON.", ()),
    compare: (
        "compare",
        "Predict Scenarios (or scenario files) side by side: a list of Predictions, each with its `label`\n"
        "(`epochcast compare --json`).",
        (),
    ),
    simulate: (
        "simulate",
        "Simulate training iterations with SimGrid: a Simulation (`epochcast simulate --json`). Where this\n"
        "epochcast was built without SimGrid (pip install), RunError says so.",
        (),
    ),
}


def _document():
    for function, (subcommand, summary, leave_out) in _SUMMARIES.items():
        lines = [summary, "", f"Keyword arguments: the flags of `epochcast {subcommand}`, dashes as underscores:", ""]
        for o in _options(subcommand).values():
            if o["positional"] or o["name"] in _SET_BY_THE_MODULE or o["name"] in leave_out:
                continue
            default = f" (default {o['default']})" if o["default"] else ""
            kind = " (True to give)" if o["flag"] else " (a list for several)" if o["repeatable"] else ""
            lines.append(f"    {o['name'].replace('-', '_')}: {o['help']}{default}{kind}")
        function.__doc__ = "\n".join(lines)


_document()
