"""docs/python.md as a reader runs it: its Python, block after block in one session, from a folder
where traces/ is the repository's, printing exactly the output the page shows after each block;
and its one-line import, printing what the page says it prints."""

import contextlib
import io
import os
import re
import subprocess
import sys

from support import SOURCE

PAGE = os.path.join(SOURCE, "docs", "python.md")


def blocks():
    """(code, the text block that follows it or None) for each ```python block of the page."""
    with open(PAGE, encoding="utf-8") as file:
        text = file.read()
    found = re.findall(r"```(python|text)\n(.*?)```", text, re.S)
    pairs = []
    for i, (kind, body) in enumerate(found):
        if kind == "python":
            after = found[i + 1] if i + 1 < len(found) else None
            pairs.append((body, after[1] if after and after[0] == "text" else None))
    return pairs


def test_the_pages_python_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    os.symlink(os.path.join(SOURCE, "traces"), tmp_path / "traces")
    monkeypatch.chdir(tmp_path)
    session = {}
    pairs = blocks()
    assert len(pairs) >= 5
    for code, shown in pairs:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, PAGE, "exec"), session)
        if shown is not None:
            assert printed.getvalue() == shown, code
    assert (tmp_path / "scaling.png").stat().st_size > 10_000
    assert (tmp_path / "k80.json").exists()


def test_the_one_line_import_prints_what_the_page_says():
    with open(PAGE, encoding="utf-8") as file:
        text = file.read()
    line = re.search(r"^    PYTHONPATH=build/python /usr/bin/python3 -c \"(.*)\"$", text, re.M).group(1)
    shown = re.search(r"which prints\n\n```text\n(.*?)```", text, re.S).group(1)
    done = subprocess.run([sys.executable, "-c", line], capture_output=True, text=True, check=True)
    assert done.stdout == shown and done.stderr == ""
