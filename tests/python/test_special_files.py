"""A FIFO (or another special file) named as an image used to hang `stoker run`, `stoker
inspect`, the Python Loader and `stoker serve` forever — an I/O thread blocked in open() — and
serve then ignored SIGTERM. Now each refuses the file at once (InvalidArgument, "not a regular
file") and goes on. Cheap: also runs under ASan/UBSan (label sanitize)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

import stoker_cli


@pytest.fixture(scope="module")
def fifo_set(stoker_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("fifo")
    stoker_cli.synth(stoker_bin, d, ["--n", "8", "--seed", "2", "--max-side", "96"])
    os.mkfifo(d / "images" / "pipe.jpg")
    text = (d / "data.jsonl").read_text()
    first = re.search(r'"(images/[^"]+)"', text).group(1)
    (d / "data.jsonl").write_text(text.replace(f'"{first}"', '"images/pipe.jpg"', 1))
    return d


def test_run_refuses_the_fifo_and_delivers_the_rest(stoker_bin, fifo_set, tmp_path):
    report = tmp_path / "errors.jsonl"
    r = subprocess.run([stoker_bin, "run", str(fifo_set / "data.jsonl"), "--batch-size", "2",
                        "--quiet", "--max-error-rate", "1", "--error-report", str(report)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    errors = [json.loads(x) for x in report.read_text().splitlines()]
    assert len(errors) == 1 and errors[0]["code"] == "InvalidArgument", errors
    assert "FIFO" in errors[0]["reason"] and "regular file" in errors[0]["reason"], errors


def test_inspect_refuses_the_fifo(stoker_bin, fifo_set):
    r = subprocess.run([stoker_bin, "inspect", str(fifo_set / "data.jsonl"), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr  # 1: an image had an error; the others were inspected
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    bad = [x for x in rows if "pipe.jpg" in json.dumps(x) and x.get("ok") is False]
    assert len(bad) == 1 and "FIFO" in json.dumps(bad[0]), rows


def test_python_loader_refuses_the_fifo(stoker_bin, fifo_set, tmp_path):
    code = ("import stoker, sys\n"
            f"l = stoker.Loader(data={str(fifo_set / 'data.jsonl')!r}, batch_size=2,"
            " max_error_rate=1.0)\n"
            "print(sum(len(b['sample_ids']) for b in l))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                       timeout=120, env=stoker_cli.python_child_env())
    if "No module named" in r.stderr:
        pytest.skip("the Python extension is not built in this tree")
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) == 7


def test_serve_with_a_fifo_image_still_stops_on_sigterm(stoker_bin, fifo_set, tmp_path):
    # serve starts producing at once (prefetch on create) and waits for clients; the FIFO sample
    # used to block an I/O thread forever, and SIGTERM then hung in the engine's shutdown.
    p = subprocess.Popen([stoker_bin, "serve", str(fifo_set / "data.jsonl"), "--world-size", "1",
                          "--socket", str(tmp_path / "s.sock"), "--batch-size", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)
        assert p.poll() is None, p.stderr.read()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
            pytest.fail("stoker serve ignored SIGTERM")
