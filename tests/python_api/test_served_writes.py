"""Writing into a served tensor (issue 15: `lab[lab == 198] = -100` killed the trainer with
SIGSEGV, the mapping was read-only). The client's mapping of the server's arena is copy-on-write
now: a write lands in this process only, never in the server's arena, and is gone when the block
comes back with a later batch. A /usr/bin/python3 child (torch 1.13) takes every batch of an epoch
from `stoker serve`, digests it, then writes into labels and pixel_values in place; the digests
must equal those of the in-process Loader for the same rank (an independent path: no server, no
mapping) — a stale private page from an earlier write would show as a wrong digest."""
import json
import os
import subprocess
import sys

from conftest import _stoker_bin

CONSUMER = r"""
import json, sys
import torch
import stoker
loader = stoker.Loader(connect=sys.argv[1], rank=0, world_size=1, connect_timeout_s=30)
for b in loader:
    d = {k: float(t.double().sum()) for k, t in b.items()}
    d["ptr"] = b["input_ids"].data_ptr()
    lab = b["labels"]
    lab[lab == 198] = -100          # the write that crashed
    b["pixel_values"].zero_()
    b["input_ids"][:, 0] = 7
    assert float(b["pixel_values"].abs().sum()) == 0 and int(b["input_ids"][0, 0]) == 7
    print(json.dumps(d), flush=True)
    del b, lab                      # the batch's last tensors: its release
"""


def digest(batch):
    return {k: float(t.double().sum()) for k, t in batch.items()}


def test_writes_into_served_tensors_stay_local(stoker, dataset, tmp_path):
    sock = str(tmp_path / "w.sock")
    server = subprocess.Popen(
        [_stoker_bin(), "serve", dataset, "--socket", sock, "--world-size", "1", "--batch-size",
         "2", "--threads", "2", "--arena-mb", "64", "--progress-s", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening on" in server.stdout.readline()
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
        env.pop("STOKER_SERVER", None)
        child = subprocess.run([sys.executable, "-c", CONSUMER, sock], env=env,
                               capture_output=True, text=True, timeout=300)
        assert child.returncode == 0, f"consumer died ({child.returncode}): {child.stderr[-2000:]}"
        out, err = server.communicate(timeout=60)
        assert server.returncode == 0, err
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    served = [json.loads(line) for line in child.stdout.splitlines()]
    ptrs = [d.pop("ptr") for d in served]
    assert len(set(ptrs)) < len(ptrs), "no block was reused: the test would prove nothing"
    expected = [digest(b) for b in stoker.Loader(dataset, batch_size=2, threads=2)]
    assert served == expected
