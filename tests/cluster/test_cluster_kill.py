"""`stoker cluster` with a random rank — receiver or worker — SIGKILLed at random moments (≥ 6
times), each kill ending the whole MPI job with mpirun's message naming that rank and its node,
and each restart resuming the receiver's --state-file with ANOTHER number of workers (1-3):
together the runs deliver exactly what one uninterrupted `stoker run` delivers — the same
batches in the same order, each epoch's samples exactly once, the same error report.

Run by ctest (labels integration, mpi) with STOKER_BIN set; standalone:
    STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/cluster/test_cluster_kill.py
"""
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "stoker", "pipeline"))
from kill_resume_test import count_lines, read_log, saved_batches  # noqa: E402

from test_cluster import MPIRUN, STOKER  # noqa: E402

EPOCHS = 3
N = 40
COMMON = ["--batch-size", "4", "--threads", "1", "--io-threads", "2", "--prefetch", "2",
          "--epochs", str(EPOCHS), "--seed", "11", "--quiet", "--max-error-rate", "1",
          "--arena-mb", "64"]

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")


def rank_pid(mpirun_pid, rank):
    """The pid of `rank` among mpirun's children (Open MPI forks local ranks itself)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = open(f"/proc/{name}/status").read()
            ppid = int(status.split("PPid:")[1].split()[0])
            if ppid != mpirun_pid:
                continue
            env = open(f"/proc/{name}/environ", "rb").read().split(b"\0")
        except (OSError, IndexError):
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(name)
    return None


def test_kills_end_the_job_and_resume_exactly_with_other_worker_counts(tmp_path):
    data_dir = tmp_path / "ds"
    subprocess.run([STOKER, "synth", "--out", str(data_dir), "--n", str(N), "--seed", "5",
                    "--max-side", "160", "--bad-fraction", "0.06"], check=True,
                   capture_output=True)
    data = str(data_dir / "data.jsonl")
    bad = len(open(data_dir / "bad.jsonl").readlines())
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    subprocess.run([STOKER, "run", data, *COMMON, "--delivered-log", str(ref_dir / "log"),
                    "--error-report", str(ref_dir / "errors.jsonl")], check=True,
                   capture_output=True)
    ref = read_log(ref_dir / "log")
    assert len(ref) > 20 and bad > 0

    work = tmp_path / "killed"
    work.mkdir()
    state, log = work / "state", work / "log"
    rng = random.Random(4321)
    kills, worker_kills, receiver_kills, attempts, counts = 0, 0, 0, 0, set()
    while True:
        attempts += 1
        assert attempts < 40, "the job never finished"
        workers = rng.choice([1, 2, 3])
        counts.add(workers)
        extra = ["--state-file", str(state), "--delivered-log", str(log), "--error-report",
                 str(work / "errors.jsonl"), "--step-ms", "40", "--pause-after-log-ms", "15",
                 "--wire", rng.choice(["float", "uint8", "encoded"])]
        if state.exists():
            extra += ["--resume", str(state)]
        lines_before = count_lines(log)
        p = subprocess.Popen([*MPIRUN, "--map-by", rng.choice(["node", "slot"]), "-np",
                              str(1 + workers), STOKER, "cluster", data, *COMMON, *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kills < 6:
            # A batch delivered (progress), then a moment anywhere in the next steps.
            deadline = time.monotonic() + 60
            while count_lines(log) <= lines_before and p.poll() is None:
                assert time.monotonic() < deadline, "no batch logged for 60 s"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.15))
            victim = rng.randrange(0, 1 + workers)
            pid = rank_pid(p.pid, victim)
            if pid is not None and p.poll() is None:
                os.kill(pid, signal.SIGKILL)
                out, err = p.communicate(timeout=120)
                if p.returncode != 0:
                    kills += 1
                    worker_kills += victim > 0
                    receiver_kills += victim == 0
                    # MPI semantics: the job ends, and mpirun names the rank and its node.
                    assert f"process rank {victim} " in err and " on node " in err, err[-3000:]
                    continue
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, out[-2000:] + err[-3000:]
        break
    print(f"kills {kills} (workers {worker_kills}, receiver {receiver_kills}), attempts "
          f"{attempts}, worker counts {sorted(counts)}")
    assert kills >= 6 and worker_kills >= 1 and receiver_kills >= 1
    assert len(counts) >= 2

    got = read_log(log)
    assert got == ref, "the resumed jobs delivered another sequence"
    per_epoch = collections.defaultdict(collections.Counter)
    for epoch, ids in got:
        per_epoch[epoch].update(ids)
    assert sorted(per_epoch) == list(range(EPOCHS))
    for epoch, c in per_epoch.items():
        assert set(c.values()) == {1} and len(c) == N - bad, f"epoch {epoch}"
    ref_errors = [json.loads(l) for l in open(ref_dir / "errors.jsonl")]
    assert [json.loads(l) for l in open(work / "errors.jsonl")] == ref_errors
    assert saved_batches(state) == len(ref)
