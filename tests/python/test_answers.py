"""plan(), calibrate(), validate(), catalog() and simulate() against their subcommands' --json (and
calibrate's file), and the in-memory documents they take written for the call, then gone."""

import datetime
import json
import tempfile

import pytest

import epochcast
from support import K80_TRACE, cli, cli_error, cli_json, keywords, python_words


INSTANCES = ["p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge"]


def test_plan_has_the_picks_and_the_front_of_the_command():
    expected = cli_json("plan --deadline 3h --instance p4d.24xlarge --instance p5.48xlarge --instance p5en.48xlarge")
    plan = epochcast.plan(deadline="3h", instance=INSTANCES)
    assert plan.to_dict() == expected
    assert plan.unmet is None
    assert isinstance(plan.cheapest_within_deadline, epochcast.Prediction)
    assert plan.cheapest_within_deadline.time_to_train_s <= 3 * 3600
    assert all(isinstance(p, epochcast.Prediction) for p in plan.front)
    assert plan.fastest_within_budget is None
    assert plan.front[0].time_to_train_s <= plan.front[-1].time_to_train_s
    assert epochcast.plan(deadline=datetime.timedelta(hours=3), instance=INSTANCES) == plan


def test_plan_with_a_budget_and_fixed_epochs():
    flags = "--budget 500 --epochs 90 --nodes 1,2,4 --instance p3.16xlarge --pricing spot --elastic --deadline 6h"
    plan = epochcast.plan(budget=500, epochs=90, nodes=[1, 2, 4], instance="p3.16xlarge", pricing="spot",
                          elastic=True, deadline="6h")
    assert plan.to_dict() == cli_json("plan " + flags)
    assert plan.fastest_within_budget.cost_usd <= 500


def test_a_plan_that_meets_nothing_says_so_as_the_command_does():
    done = cli("plan --deadline 10min --instance p3.2xlarge --json")
    assert done.returncode == 3
    plan = epochcast.plan(deadline="10min", instance="p3.2xlarge")
    assert plan.to_dict() == json.loads(done.stdout)
    assert plan.cheapest_within_deadline is None
    assert f"epochcast: {plan.unmet}\n" == done.stderr
    assert "no configuration meets the deadline" in plan.unmet


@pytest.fixture
def k80_calibration(tmp_path):
    path = tmp_path / "k80.json"
    done = cli(["calibrate", f"{K80_TRACE}#0", f"{K80_TRACE}#1", "-o", str(path)])
    assert done.returncode == 0, done.stderr
    return path


def test_calibrate_writes_the_commands_file_and_predict_and_validate_take_it(k80_calibration, tmp_path, monkeypatch):
    calibration = epochcast.calibrate([f"{K80_TRACE}#0", f"{K80_TRACE}#1"])
    assert calibration.text == k80_calibration.read_text()
    assert calibration.schema == "epochcast.calibration/1"
    assert len(calibration.fitted_from) == 2
    written = tmp_path / "written.json"
    calibration.write(written)
    assert written.read_bytes() == k80_calibration.read_bytes()

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temporary"))
    (tmp_path / "temporary").mkdir()
    flags = "--instance p2.8xlarge --nodes 4 --precision fp32 --batch-per-gpu 64 --framework tensorflow"
    assert epochcast.predict(**keywords(flags), calibration=calibration).to_dict() == cli_json(
        f"predict {flags} --calibration {k80_calibration}")
    assert epochcast.validate(K80_TRACE, calibration=calibration).to_dict() == cli_json(
        f"validate {K80_TRACE} --calibration {k80_calibration}")
    assert list((tmp_path / "temporary").iterdir()) == [], "the temporary files are gone"


def test_runs_given_as_dicts_fit_as_their_trace_does():
    with open(K80_TRACE) as file:
        runs = json.load(file)["runs"][:2]
    from_dicts = epochcast.calibrate(runs).to_dict()
    from_file = epochcast.calibrate([f"{K80_TRACE}#0", f"{K80_TRACE}#1"]).to_dict()
    for fit in (from_dicts, from_file):
        fit.pop("fitted_from")
        for residual in fit["uncertainty"]["residuals"]:
            residual.pop("origin")
    assert from_dicts == from_file


def test_validate_rows_are_the_commands():
    validation = epochcast.validate(K80_TRACE)
    assert validation.to_dict() == cli_json(f"validate {K80_TRACE}")
    with open(K80_TRACE) as file:
        assert len(validation.runs) == len(json.load(file)["runs"])
    assert validation.runs[0].measured_throughput_images_per_s > 0
    assert epochcast.validate([f"{K80_TRACE}#2", f"{K80_TRACE}#3"], leave_one_out=True).to_dict() == cli_json(
        f"validate {K80_TRACE}#2 {K80_TRACE}#3 --leave-one-out")


def test_catalog_lists_the_gpus_and_instances_of_the_command():
    catalog = epochcast.catalog()
    assert catalog.to_dict() == cli_json("catalog")
    assert any(i.name == "p5.48xlarge" for i in catalog.instances)
    assert any(g.name.startswith("H100") for g in catalog.gpus)
    assert epochcast.catalog(cloud="gcp").to_dict() == cli_json("catalog --cloud gcp")
    mine = {"schema": "epochcast.catalog/1", "instances": [{"name": "p4d.24xlarge", "price_usd_per_hour": 19.5}]}
    priced = epochcast.catalog(catalog=mine)
    assert next(i for i in priced.instances if i.name == "p4d.24xlarge").to_dict() != next(
        i for i in catalog.instances if i.name == "p4d.24xlarge").to_dict()


def test_simulate_is_the_commands_where_simgrid_is_built():
    done = cli("simulate --nodes 2 --seed 7 --jitter 0.05 --iterations 5 --json")
    if done.returncode != 0:  # built without SimGrid: a RunError says so
        with pytest.raises(epochcast.RunError, match="needs the SimGrid simulator"):
            epochcast.simulate(nodes=2)
        return
    expected = json.loads(done.stdout)
    simulation = epochcast.simulate(nodes=2, seed=7, jitter=0.05, iterations=5).to_dict()
    for measured in ("wall_s", "peak_memory_MiB"):  # of this run, not of the model
        expected["simulation"].pop(measured)
        simulation["simulation"].pop(measured)
    assert simulation == expected
    message = cli_error("simulate --iterations 0")
    with pytest.raises(epochcast.InputError) as raised:
        epochcast.simulate(iterations=0)
    assert str(raised.value) == python_words(message)
