"""Packing under SIGKILL, world-size changes and `stoker serve`.

- `stoker run --packing` killed at random moments (≥ 12 times) and resumed from its --state-file
  delivers exactly the packs an uninterrupted run delivers (same sample ids in the same rows, same
  order), every kept sample once per epoch, and the same error report.
- 3 ranks stop after k steps; their states are identical (the plan is global); 2 ranks resume from
  that state: over all ranks every kept sample is delivered exactly once (epoch-tail repeats, which
  the delivered log marks, apart).
- `stoker serve --packing --world-size 2` serves each rank the packs `stoker run --packing --rank r
  --world-size 2` delivers.

Run by ctest (label integration) with STOKER_BIN (and STOKER_PYTHON_DIR for the serve test):
    STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q src/stoker/pipeline/pack_kill_resume_test.py
"""
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from kill_resume_test import count_lines, saved_batches  # the unpacked kill test's helpers

STOKER = os.environ.get("STOKER_BIN", "stoker")
EPOCHS = 2
PACK = ["--packing", "--max-tokens", "2048", "--max-length", "2048", "--pack-window", "24"]


def run_args(data, workdir, extra=()):
    return [STOKER, "run", data, *PACK, "--threads", "2", "--io-threads", "2", "--prefetch", "2",
            "--epochs", str(EPOCHS), "--seed", "11", "--quiet", "--max-error-rate", "1",
            "--arena-mb", "256", "--error-report", str(workdir / "errors.jsonl"),
            "--delivered-log", str(workdir / "delivered.log"), *extra]


def read_log(path):
    """[(epoch, [ids], repeat)] per delivered batch."""
    out = []
    for line in open(path):
        f = line.split()
        repeat = f[-1] == "repeat"
        out.append((int(f[0]), [int(x) for x in f[2:len(f) - repeat]], repeat))
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("packkill")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", "90", "--seed", "5",
                    "--max-side", "192", "--bad-fraction", "0.06"], check=True,
                   capture_output=True)
    return d


@pytest.fixture(scope="module")
def reference(dataset, tmp_path_factory):
    ref_dir = tmp_path_factory.mktemp("packref")
    subprocess.run(run_args(str(dataset / "data.jsonl"), ref_dir), check=True, capture_output=True)
    return ref_dir


def test_kill_and_resume_delivers_the_same_packs(dataset, reference, tmp_path):
    data = str(dataset / "data.jsonl")
    ref = read_log(reference / "delivered.log")
    kept = {i for _, ids, _ in ref for i in ids}
    assert len(kept) >= 70 and not any(r for _, _, r in ref)
    work = tmp_path / "killed"
    work.mkdir()
    state, log = work / "state", work / "delivered.log"
    rng = random.Random(4321)
    kills = window_hits = attempts = 0
    while True:
        attempts += 1
        assert attempts < 200, "the run never finished"
        extra = ["--state-file", str(state), "--step-ms", "60", "--pause-after-log-ms", "30"]
        if state.exists():
            extra += ["--resume", str(state)]
        lines_before = count_lines(log)
        p = subprocess.Popen(run_args(data, work, extra), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        if kills < 14:
            kind = rng.random()
            if kind < 0.2:
                time.sleep(rng.uniform(0.0, 0.4))  # start-up: measuring the first window
            else:
                deadline = time.monotonic() + 60
                while count_lines(log) <= lines_before and p.poll() is None:
                    assert time.monotonic() < deadline, "no batch logged for 60 s"
                    time.sleep(0.002)
                time.sleep(rng.uniform(0.0, 0.02) if kind < 0.6 else rng.uniform(0.0, 0.15))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                if state.exists() and count_lines(log) > saved_batches(state):
                    window_hits += 1
                continue
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        break
    print(f"kills {kills}, window hits {window_hits}, attempts {attempts}")
    assert kills >= 12
    got = read_log(log)
    assert got == ref, "resumed runs delivered other packs"
    per_epoch = collections.defaultdict(collections.Counter)
    for epoch, ids, _ in got:
        per_epoch[epoch].update(ids)
    assert sorted(per_epoch) == list(range(EPOCHS))
    for epoch, counts in per_epoch.items():
        assert set(counts.values()) == {1} and set(counts) == kept, f"epoch {epoch}"
    ref_errors = [json.loads(l) for l in open(reference / "errors.jsonl")]
    got_errors = [json.loads(l) for l in open(work / "errors.jsonl")]
    assert got_errors == ref_errors and len(ref_errors) == EPOCHS * (90 - len(kept))
    assert "plan=" in open(state).read()


def run_rank(data, work, rank, world, extra):
    d = work / f"w{world}r{rank}"
    d.mkdir(exist_ok=True)
    r = subprocess.run(run_args(data, d, ["--rank", str(rank), "--world-size", str(world),
                                          "--state-file", str(d / "state"), *extra]),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return read_log(d / "delivered.log"), open(d / "state").readline().strip(), r.stdout


def test_world_size_change_loses_and_repeats_nothing(dataset, reference, tmp_path):
    data = str(dataset / "data.jsonl")
    kept = {i for _, ids, _ in read_log(reference / "delivered.log") for i in ids}
    delivered = collections.defaultdict(collections.Counter)
    states = set()
    for r in range(3):
        log, st, _ = run_rank(data, tmp_path, r, 3, ["--limit-batches", "3"])
        assert len(log) == 3 and not any(rep for _, _, rep in log)
        for epoch, ids, _ in log:
            delivered[epoch].update(ids)
        states.add(st)
    assert len(states) == 1, f"ranks disagree: {states}"
    (tmp_path / "mid").write_text(states.pop() + "\nbatches=0\n")
    repeats = 0
    for r in range(2):
        log, _, out = run_rank(data, tmp_path, r, 2, ["--resume", str(tmp_path / "mid")])
        assert "DP balance" in out
        for epoch, ids, rep in log:
            if rep:
                repeats += 1
                continue
            delivered[epoch].update(ids)
    assert repeats <= 2  # at most one tail step per epoch, one rank short in it
    for epoch in range(EPOCHS):
        assert set(delivered[epoch].values()) == {1}, f"epoch {epoch}: a sample twice"
        assert set(delivered[epoch]) == kept, f"epoch {epoch}: samples lost"


@pytest.mark.skipif(not os.environ.get("STOKER_PYTHON_DIR"), reason="needs the _stoker extension")
def test_serve_packing_gives_each_rank_its_packs(dataset, tmp_path):
    data = str(dataset / "data.jsonl")
    want = {}
    for r in range(2):
        log, _, _ = run_rank(data, tmp_path, r, 2, [])
        want[r] = [ids for _, ids, _ in log]
    sock = str(tmp_path / "s.sock")
    server = subprocess.Popen([STOKER, "serve", data, *PACK, "--socket", sock, "--world-size", "2",
                               "--threads", "2", "--epochs", str(EPOCHS), "--seed", "11",
                               "--progress-s", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()  # "listening on ..."
        consumer = ("import json, sys, stoker\n"
                    "l = stoker.Loader(connect=sys.argv[1], rank=int(sys.argv[2]), world_size=2)\n"
                    "out = []\n"
                    "for _ in range(%d):\n"
                    "    for b in l:\n"
                    "        assert 'cu_seq_lens_q' in b and b['input_ids'].shape[0] == 1\n"
                    "        out.append(b['sample_ids'].tolist())\n"
                    "print(json.dumps(out))\n" % EPOCHS)
        env = dict(os.environ, PYTHONPATH=os.environ["STOKER_PYTHON_DIR"])
        procs = [subprocess.Popen([sys.executable, "-c", consumer, sock, str(r)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in range(2)]
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err
            assert json.loads(out.strip().splitlines()[-1]) == want[r], f"rank {r}"
        server.wait(timeout=60)
        assert server.returncode == 0, server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
