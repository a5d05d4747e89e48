"""Issue #28: `stoker run --state-file` SIGKILLed at random points, 50 times, with the state
written after every batch and each write held open halfway for 40 ms (--state-write-pause-ms, a
test switch: the temporary holds half the text while the kill may land): after every kill the
state file is complete — it parses (checked here with its own regex, not stoker's parser) and
`--resume` accepts it — and the resumed runs together deliver exactly what one uninterrupted run
delivers, each sample once per epoch. A `<state>.tmp` left behind by a kill proves the kill landed
inside a write (between the temporary's creation and the rename); the test requires many such
hits, so it can fail if writes were not atomic. A job that finishes before the 50th kill (each
killed run got far) is checked and the kills go on in a fresh job (it used to go on with runs that
resumed a finished state and ended at once, and failed when 20 of them were needed, under load).

Run by ctest (label integration) with STOKER_BIN set; standalone:
    STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q src/stoker/pipeline/state_write_kill_test.py
"""
import collections
import os
import random
import re
import signal
import subprocess
import time

import pytest

STOKER = os.environ.get("STOKER_BIN", "stoker")
EPOCHS = 8
RECORDS = 40
KILLS = 50
STATE_RE = re.compile(r"stoker-state v1 epoch=(\d+) position=(\d+) errors=(\d+)"
                      r"((?: fp\.[a-z_]+=[A-Za-z0-9._:/+-]+)+)\nbatches=(\d+)\n")


def run_args(data, work, extra=()):
    return [STOKER, "run", data, "--batch-size", "2", "--threads", "2", "--io-threads", "2",
            "--prefetch", "2", "--epochs", str(EPOCHS), "--seed", "3", "--quiet",
            "--arena-mb", "64", "--delivered-log", str(work / "delivered.log"), *extra]


def read_log(path):
    out = []
    for line in open(path):
        f = line.split()
        out.append((int(f[0]), [int(x) for x in f[2:]]))
    return out


def complete_state(path):
    """(epoch, position, batches) of a complete state file, else an AssertionError."""
    text = open(path).read()
    m = STATE_RE.fullmatch(text)
    assert m, f"incomplete or garbled state file: {text!r}"
    assert "fp.data=" in m.group(4) and "fp.seed=3" in m.group(4), text
    return int(m.group(1)), int(m.group(2)), int(m.group(5))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("statekillds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", str(RECORDS), "--seed", "8",
                    "--max-side", "96", "--threads", "2"], check=True, capture_output=True)
    return str(d / "data.jsonl")


def test_kills_during_state_writes_always_leave_a_complete_state(dataset, tmp_path):
    ref = tmp_path / "ref"
    ref.mkdir()
    subprocess.run(run_args(dataset, ref), check=True, capture_output=True, timeout=300)
    ref_ids = [i for _, ids in read_log(ref / "delivered.log") for i in ids]
    assert len(ref_ids) == EPOCHS * RECORDS

    def check_job(work):  # the resumed runs together = the uninterrupted run, once per epoch
        got = read_log(work / "delivered.log")
        delivered = [i for _, ids in got for i in ids]
        assert delivered == ref_ids, "the resumed runs delivered another sequence"
        per_epoch = collections.defaultdict(collections.Counter)
        for epoch, ids in got:
            per_epoch[epoch].update(ids)
        assert sorted(per_epoch) == list(range(EPOCHS))
        for epoch, counts in per_epoch.items():
            assert set(counts.values()) == {1} and len(counts) == RECORDS, f"epoch {epoch}"

    # A job that finishes before all the kills landed (each killed run got far: a fast machine)
    # is checked, and the kills go on in a fresh job: every run of the loop is a real one.
    jobs = 1
    work = tmp_path / "killed-1"
    work.mkdir()
    rng = random.Random(28)
    kills = hits = runs = 0
    resumed_from = []
    while True:
        runs += 1
        assert runs < 3 * KILLS, "the run never finished"
        state = work / "state"
        tmp = work / "state.tmp"
        extra = ["--state-file", str(state), "--state-write-pause-ms", "40"]
        if state.exists():
            resumed_from.append(complete_state(state))
            extra += ["--resume", str(state)]
        if tmp.exists():
            tmp.unlink()  # so that a temporary after the next kill is that run's
        m0 = state.stat().st_mtime_ns if state.exists() else 0

        def wrote():  # this run began writing a state (a temporary, or the file itself)
            return tmp.exists() or (state.exists() and state.stat().st_mtime_ns != m0)

        p = subprocess.Popen(run_args(dataset, work, extra), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        if kills < KILLS:
            if rng.random() < 0.25:
                # Anywhere, start-up included (tokenizer, index, arena, the first batches).
                time.sleep(rng.uniform(0.02, 0.8))
            else:
                # Once batches flow (the first state write began): a random point among
                # batches and writes.
                deadline = time.monotonic() + 30
                while not wrote() and p.poll() is None:
                    assert time.monotonic() < deadline, "no state write for 30 s"
                    time.sleep(0.002)
                time.sleep(rng.uniform(0.0, 0.3))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                hits += tmp.exists()
                if state.exists():
                    complete_state(state)  # never truncated, never half-written
                continue
        err = p.communicate(timeout=300)[1].decode()
        assert p.returncode == 0, err
        check_job(work)
        if kills >= KILLS:
            break
        jobs += 1
        work = tmp_path / f"killed-{jobs}"
        work.mkdir()
    print(f"kills {kills}, inside a state write {hits}, resumes {len(resumed_from)}, jobs {jobs}")
    assert kills == KILLS
    # Most of a run's time after start-up is spent inside the (held) state write.
    assert hits >= KILLS // 4, f"only {hits} of {kills} kills landed inside a state write"
    assert len(resumed_from) >= KILLS - 10 - jobs
