"""epochcast.predict() against `epochcast predict --json`: every key of every scenario equal, the
Record's attribute access, and nothing printed."""

import datetime
import json

import pytest

import epochcast
from support import cli_json, keywords

# predict's flags; each is also called as keyword arguments (support.keywords).
SCENARIOS = [
    "--instance p5.48xlarge --nodes 4",
    "--instance p3.16xlarge --nodes 8 --batch-per-gpu 256 --precision amp --strategy ps --ps-instance m4.16xlarge "
    "--ps-nodes 16 --framework mxnet --stack legacy",
    "--instance p4d.24xlarge --nodes 4 --strategy hierarchical",
    "--instance p4d.24xlarge --loader dali --precision bf16",
    "--instance dgx-h100 --nodes 16 --framework pytorch",
    "--instance p3.16xlarge --nodes 1 --gpus-per-node 4 --pricing spot",
    "--instance p5.48xlarge --nodes 16 --pricing spot --deadline 3h",
    "--instance dgx-h100 --nodes 316 --global-batch 40448",
    "--instance p4d.24xlarge --nodes 8 --target-top1 75 --recipe goyal2017",
    "--instance p4d.24xlarge --nodes 2 --strategy ps --ps-colocated",
    "--instance p4d.24xlarge --nodes 2 --efa-adapters 0 --model resnet101 --image-size 160 --epochs 30.5",
    "--instance p5.48xlarge --nodes 2 --pricing spot --spot-interruptions-per-node-hour 0.1 --checkpoint-every 30min",
    "--instance a2-highgpu-8g --pricing reserved-3y --classes 10 --dataset-images 50000",
    "--instance p3.16xlarge --calibration data-free --memory-format nchw",
    "--instance p5.48xlarge --gpus-per-node 1 --batch-per-gpu 32 --compile",
]


@pytest.mark.parametrize("flags", SCENARIOS)
def test_every_key_equals_the_command_lines(flags):
    assert epochcast.predict(**keywords(flags)).to_dict() == cli_json("predict " + flags)


def test_a_duration_may_be_a_timedelta():
    expected = cli_json("predict --instance p5.48xlarge --nodes 16 --pricing spot --deadline 3h")
    deadline = datetime.timedelta(hours=3)
    assert epochcast.predict(instance="p5.48xlarge", nodes=16, pricing="spot", deadline=deadline).to_dict() == expected


def test_a_zero_timedelta_is_no_start_up_and_no_wait():
    # Issue 59, item 14: timedelta(0) was written "0.0s" and refused, where the command line takes "0".
    expected = cli_json("predict --instance p5.48xlarge --nodes 2 --pricing spot --startup 0 --spot-replacement-wait 0")
    zero = datetime.timedelta(0)
    got = epochcast.predict(instance="p5.48xlarge", nodes=2, pricing="spot", startup=zero, spot_replacement_wait=zero)
    assert got.to_dict() == expected
    assert got.startup_s == 0


def test_with_no_scenario_keyword_it_is_the_first_of_the_commands_three():
    # `epochcast predict` with no scenario flag compares today's default with seed 000's two set-ups.
    assert epochcast.predict().to_dict() == cli_json("predict")[0]
    assert epochcast.predict(pricing="spot").to_dict() == cli_json("predict --pricing spot")[0]


def test_a_catalog_given_as_a_dict_or_a_file_adds_an_instance(tmp_path):
    catalog = {
        "schema": "epochcast.catalog/1",
        "instances": [
            {"name": "our-box", "gpu": "A100-SXM4-80GB", "gpus": 4, "vcpus": 48, "memory_gib": 192,
             "network_gbps": 50, "intra_node_GBps": 300, "cloud": "owned", "prices": {}, "source": "our rack"}
        ],
    }
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(catalog))
    expected = cli_json(f"predict --instance our-box --nodes 2 --catalog {path}")
    assert expected["cost_usd"] is None  # owned: no price by the hour
    assert epochcast.predict(instance="our-box", nodes=2, catalog=catalog).to_dict() == expected
    assert epochcast.predict(instance="our-box", nodes=2, catalog=path).to_dict() == expected
    assert epochcast.predict(instance="our-box", nodes=2, catalog=[str(path)]).to_dict() == expected


def test_the_answer_is_a_record_of_the_json_keys():
    p = epochcast.predict(instance="p5.48xlarge", nodes=4)
    d = p.to_dict()
    assert p.cost_usd == d["cost_usd"] == p["cost_usd"]
    assert p.time_to_train_interval.low == d["time_to_train_interval"]["low"]
    assert p.scenario.instance == "p5.48xlarge"
    assert p.scenario.gpus_per_node == 8
    assert "memory_per_gpu_GiB" in p and "memory_per_gpu_GiB" in dir(p)
    assert set(p.keys()) == set(d)
    d["cost_usd"] = -1
    assert p.cost_usd > 0, "to_dict() is a copy"
    with pytest.raises(AttributeError, match="cost_usd"):
        p.cost  # noqa: B018 (the error lists the keys)
    with pytest.raises(AttributeError):
        p.cost_usd = 0
    text = repr(p)
    assert "instance='p5.48xlarge'" in text and "nodes=4" in text and "gpus=32" in text and "cost_usd=" in text
    assert epochcast.predict(instance="p5.48xlarge", nodes=4) == p


def test_nothing_is_printed(capfd):
    epochcast.predict(instance="p4d.24xlarge", nodes=2)
    with pytest.raises(epochcast.InputError):
        epochcast.predict(nodes=0)
    assert capfd.readouterr() == ("", "")


def test_the_functions_document_their_keywords_from_the_command_lines_help():
    assert "batch_per_gpu:" in epochcast.predict.__doc__
    assert "(default 256)" in epochcast.predict.__doc__
    assert "deadline:" in epochcast.plan.__doc__
    assert "json" not in epochcast.predict.__doc__.split("Keyword arguments")[1]
    assert epochcast.__version__.count(".") == 2
