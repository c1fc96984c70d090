"""epochcast.Scenario and compare() against the command line: a file `predict --save-scenario` wrote
reads into a Scenario, which writes a file the command line predicts to the last digit as its flags
did (the round trip CLI -> Python -> CLI; the GUI's half is tests/gui/test_main_window.cpp); its
command() is that line; compare() is `epochcast compare --json`; bad keys are Python's errors."""

import datetime
import json
import os

import pytest

import epochcast
from support import cli, cli_error, cli_json, python_words

FLAGS = [
    "--instance p5.48xlarge --nodes 4 --target-top1 75.9",
    "--instance p4d.24xlarge --nodes 8 --pricing spot --checkpoint-every 45min --storage fsx-lustre --storage-tib 4.8",
    "--instance p3.16xlarge --nodes 8 --framework mxnet --strategy ps --ps-instance m4.16xlarge --ps-nodes 16 "
    "--stack legacy",
    "--instance Standard_ND96isr_H100_v5 --nodes 2 --global-batch 4096 --precision bf16 --loader dali",
]


@pytest.mark.parametrize("flags", FLAGS)
def test_a_file_the_cli_saved_goes_through_python_and_back_unchanged(flags, tmp_path):
    saved = tmp_path / "cli.json"
    by_flags = cli_json(f"predict {flags} --save-scenario {saved}")
    scenario = epochcast.Scenario.read(saved)
    again = tmp_path / "python.json"
    scenario.write(again)
    assert cli_json(f"predict --scenario {again}") == by_flags
    assert again.read_text() == saved.read_text()  # the same keys, in the same order
    assert scenario.predict().to_dict() == by_flags
    # command() is the predict line that gives it.
    line = scenario.command()
    assert line.startswith("epochcast predict ")
    assert cli_json(line[len("epochcast ") :]) == by_flags


def test_keywords_make_the_scenario_the_flags_make(tmp_path):
    scenario = epochcast.Scenario(
        "big", instance="p5.48xlarge", nodes=8, pricing="spot", checkpoint_every=datetime.timedelta(minutes=30)
    )
    assert scenario.name == "big"
    assert scenario.nodes == 8
    assert scenario.checkpoint_every == "1800s"
    assert scenario.batch_per_gpu == 256  # written, as predict --save-scenario writes it
    expected = cli_json("predict --instance p5.48xlarge --nodes 8 --pricing spot --checkpoint-every 30min")
    assert scenario.predict().to_dict() == expected
    assert epochcast.predict(scenario=scenario).to_dict() == expected
    assert scenario == epochcast.Scenario(instance="p5.48xlarge", nodes=8, pricing="spot", checkpoint_every="30min",
                                          name="big")


def test_a_list_is_written_read_predicted_and_compared_in_order(tmp_path):
    small = epochcast.Scenario("small", instance="p5.48xlarge", nodes=1)
    large = epochcast.Scenario("large", instance="p5.48xlarge", nodes=8)
    path = tmp_path / "list.json"
    epochcast.write_scenarios(path, [small, large])
    assert epochcast.Scenario.read(path) == [small, large]
    predicted = epochcast.predict(scenario=str(path))
    assert [p.gpus for p in predicted] == [8, 64]
    compared = epochcast.compare(small, large)
    assert [c.label for c in compared] == ["small", "large"]
    by_cli = cli_json(["compare", str(path)])
    assert [c.to_dict() for c in compared] == by_cli
    assert compared[1].throughput_images_per_s == predicted[1].throughput_images_per_s


def test_bad_keys_are_pythons_errors_naming_them():
    with pytest.raises(TypeError, match="unexpected keyword argument 'nodez'"):
        epochcast.Scenario(nodez=2)
    with pytest.raises(TypeError, match="nodes= takes one value, not a list"):
        epochcast.Scenario(nodes=[1, 2])
    with pytest.raises(TypeError, match="name= must be a str"):
        epochcast.Scenario(3)
    with pytest.raises(ValueError, match='"nodes" value 0'):
        epochcast.Scenario(nodes=0)
    with pytest.raises(ValueError, match='"instance" value "p9.mega"'):
        epochcast.Scenario(instance="p9.mega")
    with pytest.raises(TypeError, match="compare\\(\\) takes Scenario objects"):
        epochcast.compare(epochcast.Scenario(), 3)
    with pytest.raises(AttributeError, match="read-only"):
        epochcast.Scenario().nodes = 3


def test_predict_with_a_scenario_and_its_flags_is_the_clis_error(tmp_path):
    path = tmp_path / "one.json"
    epochcast.Scenario(instance="p5.48xlarge", nodes=2).write(path)
    message = cli_error(["predict", "--scenario", str(path), "--nodes", "4"])
    with pytest.raises(epochcast.InputError) as error:
        epochcast.predict(scenario=str(path), nodes=4)
    assert str(error.value) == python_words(message)
    assert str(error.value).startswith("nodes=: the configuration comes from scenario= ")


def test_writing_leaves_no_half_file(tmp_path):
    folder = tmp_path / "gone"
    with pytest.raises(OSError):
        epochcast.Scenario().write(folder / "s.json")
    assert not os.path.exists(folder)
    assert json.loads(epochcast.Scenario().text())["schema"] == "epochcast.scenario/1"
    assert cli(["predict", "--scenario", str(tmp_path / "missing.json")]).returncode == 2
