"""Bad input raises InputError (a ValueError) with exactly the line the command prints after
"epochcast: error: " for the same input, its flags named as keywords (support.python_words): the
cases of the CLI's own tests (tests/cli), keyword arguments as a Python user writes them; a value of
the wrong type is a TypeError naming the keyword."""

import pytest

import epochcast
from support import K80_TRACE, cli_error, keywords, python_words

# tests/cli/test_predict_cli.cpp's cases; each is also called as keyword arguments (support.keywords:
# numbers as numbers, "inf" and "nan" as floats, a repeated flag as a list).
PREDICT = [
    "--instance p9.large",
    "--nodes 0",
    "--batch-per-gpu -8",
    "--batch-per-gpu 2048",
    "--gpus-per-node 16",
    "--strategy allgather",
    "--strategy ps",
    "--precision fp8",
    "--framework caffe",
    "--pricing cheap",
    "--model resnet51",
    "--catalog /nonexistent/catalog.json",
    "--calibration /nonexistent/cal.json",
    "--nodes 1000",
    "--target-top1 0",
    "--target-top1 inf",
    "--target-top1 75.9 --epochs 40",
    "--target-top1 75 --recipe lamb",
    "--recipe goyal2017",
    "--target-top1 77",
    "--instance p5e.48xlarge",
    "--instance p5en.48xlarge --pricing reserved-3y",
    "--nodes 2147483647",
    "--nodes 99999999999",
    "--image-size 2147483647",
    "--epochs 1e15",
    "--epochs inf",
    "--epochs nan",
    "--epochs 0",
    "--gpus-per-node 0",
    "--efa-adapters -1",
    "--instance p4d.24xlarge --efa-adapters 99",
    "--ps-nodes 0",
    "--global-batch 0",
    "--dataset-images -5",
    "--dataset-images 9223372036854775807",
    "--deadline soon",
    "--pricing spot --spot-interruptions-per-node-hour -1",
]


@pytest.mark.parametrize("flags", PREDICT)
def test_predict(flags):
    message = cli_error("predict " + flags)
    with pytest.raises(epochcast.InputError) as raised:
        epochcast.predict(**keywords(flags))
    assert str(raised.value) == python_words(message)
    assert isinstance(raised.value, ValueError)


def test_a_message_names_the_keywords():
    with pytest.raises(epochcast.InputError, match=r"^nodes= must be at least 1 \(got 0\)$"):
        epochcast.predict(nodes=0)
    with pytest.raises(epochcast.InputError, match=r"^batch_per_gpu= must be at least 1"):
        epochcast.predict(batch_per_gpu=-8)


# The command line refuses these as text it cannot read; Python, before running it, as the wrong type.
WRONG_TYPES = [
    (dict(batch_per_gpu="lots"), r"predict\(\) batch_per_gpu= takes a whole number \(int\), not str 'lots'"),
    (dict(nodes="4"), r"predict\(\) nodes= takes a whole number \(int\), not str '4'"),
    (dict(nodes=2.5), r"predict\(\) nodes= takes a whole number \(int\), not float 2.5"),
    (dict(nodes=True), r"predict\(\) nodes= takes a whole number \(int\), not bool True"),
    (dict(global_batch=float("inf")), r"global_batch= takes a whole number \(int\), not float inf"),
    (dict(classes=float("nan")), r"classes= takes a whole number \(int\), not float nan"),
    (dict(nodes=[1, 2]), r"predict\(\) nodes= takes one value, not a list"),
    (dict(epochs="ninety"), r"predict\(\) epochs= takes a number, not str 'ninety'"),
    (dict(ps_colocated="yes"), r"predict\(\) ps_colocated= takes True or False, not str 'yes'"),
    (dict(instance=True), r"predict\(\) instance= takes text, not bool True"),
]


@pytest.mark.parametrize("keywords_, expected", WRONG_TYPES)
def test_a_value_of_the_wrong_type_is_a_type_error_naming_the_keyword(keywords_, expected):
    with pytest.raises(TypeError, match=expected):
        epochcast.predict(**keywords_)
    # Still a number where the flag takes one: numpy's, a whole float for a figure.
    assert epochcast.predict(nodes=2, epochs=45).gpus == 16


def test_a_configuration_that_cannot_run_is_an_infeasible_error():
    with pytest.raises(epochcast.InfeasibleError, match="largest batch that fits"):
        epochcast.predict(batch_per_gpu=2048)


OTHERS = [
    "plan",
    "plan --deadline soon",
    "plan --budget -5",
    "plan --deadline 2h --cloud mars",
    "plan --deadline 2h --confidence 1",
    "plan --deadline 2h --nodes 0",
    "catalog --cloud mars",
]


@pytest.mark.parametrize("command", OTHERS)
def test_other_subcommands(command):
    subcommand, _, flags = command.partition(" ")
    message = cli_error(command)
    with pytest.raises(epochcast.InputError) as raised:
        getattr(epochcast, subcommand)(**keywords(flags))
    assert str(raised.value) == python_words(message)


def test_traces(tmp_path):
    missing = str(tmp_path / "none.json")
    for command, call in [
        (f"calibrate {missing} -o {tmp_path / 'c.json'}", lambda: epochcast.calibrate(missing)),
        (f"calibrate {K80_TRACE}#99 -o {tmp_path / 'c.json'}", lambda: epochcast.calibrate(f"{K80_TRACE}#99")),
        (f"validate {K80_TRACE}#x", lambda: epochcast.validate(f"{K80_TRACE}#x")),
        (f"validate {K80_TRACE} --hold-out nobody", lambda: epochcast.validate(K80_TRACE, hold_out="nobody")),
    ]:
        with pytest.raises(epochcast.InputError) as raised:
            call()
        assert str(raised.value) == python_words(cli_error(command))


def test_a_run_given_as_a_dict_is_checked_as_a_trace_run():
    with pytest.raises(epochcast.InputError, match=r"runs.json: run 0: .*nodes"):
        epochcast.calibrate([{"instance": "p3.16xlarge", "nodes": 0, "batch_per_gpu": 64, "precision": "amp",
                              "strategy": "ring", "framework": "tensorflow", "source": "ours",
                              "measured": {"throughput_images_per_s": 100}}])


def test_a_keyword_that_is_no_flag_is_a_type_error_naming_those_there_are():
    expected = r"predict\(\) got an unexpected keyword argument 'frobnicate'; it takes .*batch_per_gpu"
    with pytest.raises(TypeError, match=expected):
        epochcast.predict(frobnicate=True)
    with pytest.raises(TypeError, match="'json'"):
        epochcast.predict(json=True)
    with pytest.raises(TypeError, match="'output'"):
        epochcast.calibrate(K80_TRACE, output="c.json")


def test_an_empty_list_or_a_dict_where_no_document_goes_is_an_input_error():
    # Issue 59, item 14: plan(nodes=[]) searched the default node counts; nodes={} named a
    # temporary file's path in its error.
    with pytest.raises(epochcast.InputError, match=r"^nodes=\[\] gives no value; leave nodes out"):
        epochcast.plan(deadline="2h", nodes=[])
    with pytest.raises(epochcast.InputError, match=r"^nodes= takes no dict \(a dict is a document: calibration=, "
                                                    r"catalog=, elastic=, prior=\)$"):
        epochcast.predict(nodes={})


def test_a_lone_surrogate_is_an_input_error_naming_the_keyword():
    # Issue 59, item 14: a lone surrogate gave pybind11's raw "incompatible function arguments".
    with pytest.raises(epochcast.InputError, match=r"^instance= holds a lone surrogate \(U\+D800\), which is no "
                                                    r"character"):
        epochcast.predict(instance="p5\ud800.48xlarge")
    # U+DC80-U+DCFF stand for a file name's undecodable bytes (os.fsdecode): passed on as those bytes,
    # which the command names as it names any such byte.
    with pytest.raises(epochcast.InputError, match=r"^unknown instance 'p5\\x80'"):
        epochcast.predict(instance="p5\udc80")


def test_nothing_is_printed(capfd):
    for call in [lambda: epochcast.predict(nodes=0), lambda: epochcast.plan(deadline="soon")]:
        with pytest.raises(epochcast.InputError):
            call()
    assert capfd.readouterr() == ("", "")
