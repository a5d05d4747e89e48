"""Terminal and log injection (issue 30 §5). Text from data — a record's id, a media path, the
manifest's name — can hold ESC sequences or a "\\n{fake json}"; `stoker run`'s summary, its
errors, `stoker inspect`'s table and the Python exceptions used to print them raw (the error
report escaped them). Now every such text is escaped (base/printable.h): no ESC/C1 byte and no
forged line reaches stdout or stderr. A manifest whose name is not UTF-8 still gives an error
report of valid JSON (UTF-8), its "file" naming the bytes as \\xNN.
Cheap (~5 s)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

import stoker_cli

ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"
FORGED = '\n{"sample": 999, "stage": "forged"}\n'


def assert_clean(text: str, what: str):
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, \
        f"{what}: a raw control character reached the terminal:\n{text!r}"
    assert not any(line.startswith('{"sample": 999') for line in text.splitlines()), \
        f"{what}: a forged line:\n{text}"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("inject")
    rec = {"id": "rec" + ESC + FORGED,
           "messages": [{"role": "user", "content": [
               {"type": "image", "image": "img" + ESC + FORGED.replace("\n", "\\n") + ".png"},
               {"type": "text", "text": "?"}]},
               {"role": "assistant", "content": "x"}]}
    rec2 = dict(rec, messages=[{"role": "user", "content": [
        {"type": "image", "image": "a\nb" + ESC + ".png"}, {"type": "text", "text": "?"}]},
        {"role": "assistant", "content": "x"}])
    name = os.fsencode(str(d)) + b"/data-\xff\xfe" + ESC.encode() + b".jsonl"
    with open(name, "wb") as f:
        f.write((json.dumps(rec) + "\n" + json.dumps(rec2) + "\n").encode())
    return d, name


def test_run_summary_and_errors_are_escaped(stoker_bin, hostile, tmp_path):
    d, name = hostile
    report = tmp_path / "errors.jsonl"
    r = subprocess.run([os.fsencode(stoker_bin), b"run", name, b"--batch-size", b"1",
                        b"--max-error-rate", b"1", b"--error-report", os.fsencode(str(report))],
                       capture_output=True, timeout=60)
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")  # strict: valid UTF-8
    assert r.returncode == 0, err
    assert "2 failed" in out, out
    assert_clean(out + err, "stoker run")
    assert "\\x1b" in out and "\\xff\\xfe" in out, out  # shown, escaped
    # The report: valid UTF-8 JSON lines, "file" naming the manifest's bytes as \xNN.
    lines = report.read_bytes().decode("utf-8").splitlines()
    rows = [json.loads(x) for x in lines]
    assert len(rows) == 2
    assert all("data-\\xff\\xfe\x1b" in row["file"] for row in rows), rows


def test_a_failing_run_names_the_manifest_escaped(stoker_bin, tmp_path):
    missing = os.fsencode(str(tmp_path)) + b"/gone" + ESC.encode() + b"\n{fake}.jsonl"
    r = subprocess.run([os.fsencode(stoker_bin), b"run", missing], capture_output=True, timeout=60)
    err = r.stderr.decode("utf-8")
    assert r.returncode != 0
    assert "gone\\x1b" in err and "\\n{fake}" in err, err
    assert_clean(err, "stoker run (error)")


def test_inspect_table_is_escaped(stoker_bin, hostile):
    d, name = hostile
    r = subprocess.run([os.fsencode(stoker_bin), b"inspect", name], capture_output=True,
                       timeout=60)
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")
    assert r.returncode == 1, err
    assert_clean(out + err, "stoker inspect")


def test_python_exceptions_are_escaped(hostile):
    d, name = hostile
    code = ("import stoker, sys\n"
            "name = sys.argv[1] + '/gone\\x1b[2J\\n{fake}.jsonl'\n"
            "try:\n"
            "    stoker.Loader(data=name, batch_size=1)\n"
            "except stoker.StokerError as e:\n"
            "    sys.stdout.write(str(e))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, str(d)], capture_output=True,
                       timeout=120, env=stoker_cli.python_child_env())
    if "No module named" in r.stderr.decode():
        pytest.skip("the Python extension is not built in this tree")
    out = r.stdout.decode("utf-8")
    assert "gone\\x1b[2J\\n{fake}" in out, out + r.stderr.decode()
    assert_clean(out, "Python exception")
