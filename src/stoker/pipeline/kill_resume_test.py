"""`stoker run` killed with SIGKILL at random moments (≥ 20 times) and resumed from its
--state-file each time delivers exactly what an uninterrupted run delivers: the same samples in
the same order, each epoch's samples exactly once, and the same error report.

Run by ctest (label integration) with STOKER_BIN set; standalone:
    STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q src/stoker/pipeline/kill_resume_test.py
"""
import collections
import json
import os
import random
import signal
import subprocess
import time

import pytest

STOKER = os.environ.get("STOKER_BIN", "stoker")
EPOCHS = 3


def run_args(data, workdir, extra=()):
    return [STOKER, "run", data, "--batch-size", "4", "--threads", "2", "--io-threads", "2",
            "--prefetch", "2", "--epochs", str(EPOCHS), "--seed", "11", "--quiet",
            "--max-error-rate", "1", "--arena-mb", "256",
            "--error-report", str(workdir / "errors.jsonl"),
            "--delivered-log", str(workdir / "delivered.log"), *extra]


def read_log(path):
    batches = []
    for line in open(path):
        fields = line.split()
        batches.append((int(fields[0]), [int(x) for x in fields[2:]]))
    return batches


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def saved_batches(state):
    for line in open(state):
        if line.startswith("batches="):
            return int(line.split("=")[1])
    return 0


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("killds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", "90", "--seed", "5",
                    "--max-side", "192", "--bad-fraction", "0.06"], check=True,
                   capture_output=True)
    return d


def test_kill_and_resume_delivers_each_sample_once(dataset, tmp_path):
    data = str(dataset / "data.jsonl")
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    subprocess.run(run_args(data, ref_dir), check=True, capture_output=True)
    ref = read_log(ref_dir / "delivered.log")
    ref_ids = [i for _, ids in ref for i in ids]
    bad = len(open(dataset / "bad.jsonl").readlines())
    assert len(set(ref_ids)) == 90 - bad
    assert len(ref_ids) == EPOCHS * (90 - bad)

    work = tmp_path / "killed"
    work.mkdir()
    state = work / "state"
    log = work / "delivered.log"
    rng = random.Random(1234)
    kills = window_hits = attempts = 0
    finished = False
    while not finished:
        attempts += 1
        assert attempts < 200, "the run never finished"
        # The pause makes kills between "batch logged" and "state saved" likely: the window in
        # which a wrong ordering (or a log not cut back on resume) would repeat or lose samples.
        extra = ["--state-file", str(state), "--step-ms", "50", "--pause-after-log-ms", "30"]
        if state.exists():
            extra += ["--resume", str(state)]
        lines_before = count_lines(log)
        p = subprocess.Popen(run_args(data, work, extra), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        if kills < 24:
            kind = rng.random()
            if kind < 0.2:
                time.sleep(rng.uniform(0.0, 0.3))  # during start-up / the first batch
            else:
                # Once a new batch is logged (after the resumed run cut the log back): right
                # away (inside the pause) or anywhere in the next step.
                deadline = time.monotonic() + 30
                while count_lines(log) <= lines_before and p.poll() is None:
                    assert time.monotonic() < deadline, "no batch logged for 30 s"
                    time.sleep(0.002)
                time.sleep(rng.uniform(0.0, 0.02) if kind < 0.6 else rng.uniform(0.0, 0.12))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                if state.exists() and count_lines(log) > saved_batches(state):
                    window_hits += 1
                continue
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        finished = True
    print(f"kills {kills}, window hits {window_hits}, attempts {attempts}")
    assert kills >= 20
    assert window_hits >= 1, "no kill landed between logging a batch and saving the state"

    got = read_log(work / "delivered.log")
    got_ids = [i for _, ids in got for i in ids]
    assert got_ids == ref_ids, "resumed runs delivered a different sequence"
    per_epoch = collections.defaultdict(collections.Counter)
    for epoch, ids in got:
        per_epoch[epoch].update(ids)
    assert sorted(per_epoch) == list(range(EPOCHS))
    for epoch, counts in per_epoch.items():
        assert set(counts.values()) == {1}, f"epoch {epoch}: a sample delivered twice"
        assert len(counts) == 90 - bad, f"epoch {epoch}: samples lost"
    # The error report lists every failure once, like the uninterrupted run's.
    ref_errors = [json.loads(l) for l in open(ref_dir / "errors.jsonl")]
    got_errors = [json.loads(l) for l in open(work / "errors.jsonl")]
    assert got_errors == ref_errors
    assert len(ref_errors) == EPOCHS * bad


def test_summary_names_the_limiter_from_measured_waits(dataset, tmp_path):
    def summary(step_ms):
        r = subprocess.run([STOKER, "run", str(dataset / "data.jsonl"), "--batch-size", "4",
                            "--threads", "2", "--quiet", "--max-error-rate", "1",
                            "--error-report", str(tmp_path / "e.jsonl"), "--step-ms", step_ms],
                           capture_output=True, text=True, check=True)
        return r.stdout
    # A slow trainer: the loader keeps up, the trainer is the limit.
    slow = summary("250")
    assert "limiter: the trainer" in slow, slow
    assert "wait ratio" in slow and "peak RSS" in slow and "producer time:" in slow
    bad = len(open(dataset / "bad.jsonl").readlines())
    assert f"{90 - bad} samples, {bad} failed" in slow
    # No trainer at all: the loader is the limit, and the summary says which part of it.
    fast = summary("0")
    line = next(x for x in fast.splitlines() if x.strip().startswith("limiter:"))
    assert "the trainer" not in line and any(k in line for k in ("emit", "prepare", "read",
                                                                   "I/O", "arena", "budget")), fast


def test_strict_stops_with_the_failed_sample(dataset, tmp_path):
    r = subprocess.run([STOKER, "run", str(dataset / "data.jsonl"), "--strict", "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "strict mode" in r.stderr and "data.jsonl:" in r.stderr


def test_bad_flags_are_usage_errors(dataset):
    r = subprocess.run([STOKER, "run", str(dataset / "data.jsonl"), "--mode", "fast"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--mode" in r.stderr
