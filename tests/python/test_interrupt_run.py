"""Ctrl-C and SIGTERM of `stoker run`, and serve's progress lines (issue 30 §16).
- `stoker run` used to die silently on Ctrl-C / SIGTERM. Now it stops after the batch in hand,
  prints its summary, where the state is and the exact command that resumes (exit 130 / 143);
  that command, run as printed, completes the epoch: every sample delivered exactly once.
- Without --state-file it says that nothing was saved and how to make a run resumable.
- `stoker serve` printed "rank N: detached … position 0" every --progress-s while the ranks
  started; a line is now printed only when it changed (and once more at the end).
Cheap (~10 s)."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time

import pytest

GOOD = json.dumps({"messages": [{"role": "user", "content": "Say hi."},
                                {"role": "assistant", "content": "Hi."}]})
N, BATCH = 40, 2


@pytest.fixture()
def data(tmp_path):
    p = tmp_path / "data.jsonl"
    p.write_text((GOOD + "\n") * N)
    return p


def start(stoker_bin, data, tmp_path, *extra):
    return subprocess.Popen([stoker_bin, "run", str(data), "--batch-size", str(BATCH),
                             "--threads", "1", "--arena-mb", "64", "--quiet", "--step-ms", "100",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)


def wait_lines(path, n, proc, timeout=60):
    end = time.time() + timeout
    while not (path.exists() and len(path.read_text().splitlines()) >= n):
        assert proc.poll() is None and time.time() < end, proc.communicate()
        time.sleep(0.05)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_run_says_where_the_state_is_and_how_to_resume(stoker_bin, data, tmp_path, sig, code):
    state, log = tmp_path / "run.state", tmp_path / "delivered.log"
    p = start(stoker_bin, data, tmp_path, "--state-file", "run.state", "--delivered-log",
              "delivered.log")
    wait_lines(log, 3, p)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    name = signal.Signals(sig).name
    assert f"stoker run: interrupted by {name} after" in err, err
    assert "state after the last delivered batch: run.state" in err, err
    m = re.search(r"resume with: (.*)", err)
    assert m and m.group(1).endswith("--resume run.state"), err
    assert "batches" in out  # the summary came too
    # The printed command, as printed (the binary for `stoker`), finishes the epoch exactly once.
    words = shlex.split(m.group(1))
    assert words[:2] == ["stoker", "run"], words
    r = subprocess.run([stoker_bin] + words[1:], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ids = [int(x) for line in log.read_text().splitlines() for x in line.split()[2:]]
    assert sorted(ids) == list(range(N)), ids


def test_without_a_state_file_it_says_nothing_was_saved(stoker_bin, data, tmp_path):
    log = tmp_path / "delivered.log"
    p = start(stoker_bin, data, tmp_path, "--delivered-log", "delivered.log")
    wait_lines(log, 2, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "no --state-file was given, so no state was saved" in err, err
    assert "--state-file FILE" in err and "stoker-state v1" in err, err


def test_serve_prints_an_unchanged_rank_line_once(stoker_bin, data, tmp_path):
    sock = str(tmp_path / "s.sock")
    p = subprocess.Popen([stoker_bin, "serve", str(data), "--world-size", "2", "--socket", sock,
                          "--progress-s", "0.2", "--threads", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # ~10 progress periods, no rank attached
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    for rank in (0, 1):
        lines = [x for x in out.splitlines() if x.startswith(f"stoker serve: rank {rank}: detached")]
        # once while waiting, once in the final report
        assert len(lines) <= 2, out
