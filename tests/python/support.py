"""What the Python module's tests share: the built `epochcast` program, run as a user runs it, to
hold each Python answer and error to the command line's. ctest sets EPOCHCAST_CLI and
EPOCHCAST_SOURCE_DIR (tests/CMakeLists.txt) and PYTHONPATH to the built module."""

import json
import math
import os
import re
import shlex
import subprocess

CLI = os.environ.get("EPOCHCAST_CLI", "build/epochcast")
SOURCE = os.environ.get("EPOCHCAST_SOURCE_DIR", ".")
K80_TRACE = os.path.join(SOURCE, "traces/published/external_tf_benchmarks_k80_distributed.json")


def cli(arguments):
    """`epochcast ARGUMENTS` (a string split as the shell would, or a list): the finished process."""
    if isinstance(arguments, str):
        arguments = shlex.split(arguments)
    return subprocess.run([CLI, *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)


def cli_json(arguments):
    """What `epochcast ARGUMENTS --json` prints, parsed; the command must succeed."""
    done = cli(shlex.split(arguments) + ["--json"] if isinstance(arguments, str) else arguments + ["--json"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_error(arguments, code=2):
    """The message of the one line `epochcast ARGUMENTS` prints on stderr for bad input, after
    "epochcast: error: " (exit code 2)."""
    done = cli(arguments)
    assert done.returncode == code, (arguments, done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    prefix = "epochcast: error: " if code == 2 else "epochcast: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix) :]


def python_words(message):
    """A command-line message as Python's functions say it: each flag it names, --batch-per-gpu, as
    the keyword, batch_per_gpu= (but --json and --output, which the module gives itself)."""
    return re.sub(
        r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)",
        lambda m: m.group(0) if m.group(1) in ("json", "output", "markdown") else m.group(1).replace("-", "_") + "=",
        message,
    )


def keywords(flags):
    """Command-line flags as the keyword arguments a Python user writes: "--batch-per-gpu 512
    --ps-colocated --epochs inf" is dict(batch_per_gpu=512, ps_colocated=True, epochs=inf); a
    repeated flag gives a list."""
    result = {}
    words = shlex.split(flags)
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name = word[2:].replace("-", "_")
        value = True
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    pass
        if name in result:
            previous = result[name]
            value = (previous if isinstance(previous, list) else [previous]) + [value]
        result[name] = value
    return result


def csv_field(value):
    """A Python sweep value as `epochcast sweep` writes it in its CSV: numbers with 7 significant
    digits (%.7g), whole numbers exactly, true/false, and an empty field for none."""
    import numbers

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if type(value).__name__ in ("NAType", "NaTType"):
        return ""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):  # numpy's: bool_ before numpy 2
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return "" if math.isnan(value) else "%.7g" % value
    return str(value)
