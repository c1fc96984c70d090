"""epochcast.sweep() against `epochcast sweep`'s CSV: the same columns in the same order and, cell by
cell, the same values (the CSV prints 7 significant digits, the frame keeps them all), as a
DataFrame and as a list of dicts; a spec as a dict or a file; the CLI's errors."""

import csv
import io
import json

import pytest

import epochcast
from support import cli, cli_error, csv_field, python_words

# Feasible and infeasible rows (a batch that does not fit, too many nodes for the dataset), dedicated
# and co-located parameter servers, an owned machine (no price: empty money columns), spot, EFA off.
SPEC = {
    "instance": ["p3.16xlarge", "p4d.24xlarge", "dgx-a100"],
    "nodes": [1, 3, 1000],
    "strategy": ["ring", "ps", "nccl"],
    "ps_instance": "c5n.18xlarge",
    "ps_ratio": 0.5,
    "batch_per_gpu": [64, 4096],
    "pricing": ["on-demand", "spot"],
    "efa_adapters": [0],
}
GLOBAL_BATCH_SPEC = {"instance": "p4d.24xlarge", "global_batch": [1000, 4096], "nodes": [1, 3],
                     "ps_colocated": [True, False], "strategy": ["ps", "hierarchical"]}


def cli_rows(arguments):
    done = cli(arguments)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    return rows[0], rows[1:]


def frame_rows(frame):
    return [[csv_field(v) for v in row] for row in frame.itertuples(index=False, name=None)]


def dict_rows(records):
    return [[csv_field(v) for v in record.values()] for record in records]


@pytest.fixture
def spec_file(tmp_path):
    def write(spec, name="spec.json"):
        path = tmp_path / name
        path.write_text(json.dumps(spec))
        return path

    return write


@pytest.mark.parametrize("spec, flags, keywords", [
    (SPEC, "", {}),
    (GLOBAL_BATCH_SPEC, "", {}),
    (GLOBAL_BATCH_SPEC, "--target-top1 75 --jobs 1", dict(target_top1=75, jobs=1)),
    (SPEC, "--columns results,nodes,elastic_spot", dict(columns="results,nodes,elastic_spot")),
    ({"instance": ["p5.48xlarge", "dgx-a100"], "nodes": [1, 2, 16]}, "--calibration data-free",
     dict(calibration="data-free")),
])
def test_the_frame_is_the_command_lines_csv(spec, flags, keywords, spec_file):
    path = spec_file(spec)
    header, rows = cli_rows(f"sweep {path} {flags}")
    frame = epochcast.sweep(path, **keywords)
    assert list(frame.columns) == header
    assert frame_rows(frame) == rows
    assert epochcast.sweep(spec, **keywords).equals(frame), "a dict is the same spec as its file"


def test_without_pandas_it_is_a_list_of_dicts_of_the_same_values(spec_file, monkeypatch):
    path = spec_file(SPEC)
    header, rows = cli_rows(f"sweep {path}")
    monkeypatch.setattr(epochcast, "_pandas", lambda: None)
    with pytest.warns(UserWarning, match="pandas is not installed for this Python .*: sweep\\(\\) returns a list of dicts"):
        records = epochcast.sweep(path)
    assert isinstance(records, list) and len(records) == len(rows)
    assert list(records[0]) == header
    assert dict_rows(records) == rows
    infeasible = next(r for r in records if not r["feasible"])
    assert infeasible["cost_usd"] is None and infeasible["reason"]
    feasible = next(r for r in records if r["feasible"])
    assert feasible["reason"] is None and isinstance(feasible["nodes"], int) and isinstance(feasible["cost_usd"], float)


def test_the_columns_types(spec_file):
    frame = epochcast.sweep(SPEC, columns="all")
    assert str(frame["throughput_images_per_s"].dtype) == "float64"
    assert str(frame["nodes"].dtype) == "int64"
    # Counts the model gives are counts too (issue 62: they were float64); an infeasible row leaves them empty.
    for count in ("gpus", "global_batch", "buckets"):
        assert str(frame[count].dtype) in ("int64", "Int64"), (count, frame[count].dtype)
    assert str(frame["ps_nodes"].dtype) == "Int64", "a count that may be empty is a nullable integer"
    assert str(frame["feasible"].dtype) == "bool"
    assert str(frame["global_batch_beyond_published"].dtype) == "boolean"
    assert str(frame["instance"].dtype) == "category"
    assert set(frame["instance"]) == set(SPEC["instance"])
    assert frame["cost_usd"][frame["instance"] == "dgx-a100"].isna().all(), "an owned machine has no price"
    assert (frame["cost_usd"][frame["feasible"]].dropna() > 0).all()


def test_spec_errors_are_the_command_lines(spec_file):
    for spec, expected in [
        ({"nodes": [4, 0]}, '"nodes" value 0'),
        ({"instance": "p9.mega"}, '"instance" value "p9.mega"'),
        ({"precision": ["amp", "fp7"]}, '"precision" value "fp7"'),
        ({"gpus": 8}, 'unknown key "gpus"'),
        ({"nodes": []}, '"nodes" is an empty list'),
    ]:
        path = spec_file(spec)
        message = cli_error(f"sweep {path}")
        assert expected in message
        with pytest.raises(epochcast.InputError) as raised:
            epochcast.sweep(path)
        assert str(raised.value) == message
        # As a dict the spec has no file: "spec" names it.
        with pytest.raises(epochcast.InputError) as raised:
            epochcast.sweep(spec)
        assert str(raised.value) == message.replace(str(path), "spec")
    broken = spec_file({}, "broken.json")
    broken.write_text('{"nodes": [1, 2)')
    with pytest.raises(epochcast.InputError) as raised:
        epochcast.sweep(broken)
    assert str(raised.value) == cli_error(f"sweep {broken}") and "malformed JSON" in str(raised.value)


def test_flag_errors_are_the_command_lines(spec_file, tmp_path):
    path = spec_file(SPEC)
    for flags, keywords in [
        ("--jobs 0", dict(jobs=0)),
        ("--jobs 5000", dict(jobs=5000)),
        ("--target-top1 101", dict(target_top1=101)),
        ("--recipe lamb --target-top1 75", dict(recipe="lamb", target_top1=75)),
        ("--recipe goyal2017", dict(recipe="goyal2017")),
        ("--calibration /nonexistent/cal.json", dict(calibration="/nonexistent/cal.json")),
        # Issue 59, item 2: estimated and refused before anything runs, as the command line does.
        ("--simulate --iterations 1000000", dict(simulate=True, iterations=1000000)),
    ]:
        with pytest.raises(epochcast.InputError) as raised:
            epochcast.sweep(path, **keywords)
        assert str(raised.value) == python_words(cli_error(f"sweep {path} {flags}")), flags
    missing = tmp_path / "nope.json"
    with pytest.raises(epochcast.InputError) as raised:
        epochcast.sweep(missing)
    assert str(raised.value) == cli_error(f"sweep {missing}")
    with pytest.raises(TypeError, match="plot"):
        epochcast.sweep(path, plot="sweep.png")
    with pytest.raises(TypeError, match="output"):
        epochcast.sweep(path, output="rows.csv")


def test_nothing_is_printed(capfd):
    epochcast.sweep(GLOBAL_BATCH_SPEC)
    assert capfd.readouterr() == ("", "")
