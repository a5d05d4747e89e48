"""A served mixture resumes exactly from a client's saved state (ctest `served_mixture_resume`,
issue 23 deliverable 4; shm protocol version 4: the attach carries the state as its text, the
plan's per-source cursors `mix=` included).

A 3-source weighted blend (JSONL, WebDataset shards, an Energon folder; MetadatasetV2 YAML) is
served by `stoker serve --world-size 2`:
- server A: each rank's whole stream, uninterrupted (sample ids + a SHA-256 of every tensor);
- the state after k batches of each rank: an in-process stoker.Loader of the same rank (an
  independent path: no server, no socket) takes k batches — the same as the served ones, by ids
  and tensor hashes — and its state_dict() is saved (a served client has no state_dict(): the
  server owns the position);
- server B, a fresh `stoker serve` process: hostile attaches first — malformed state texts, an
  oversized state, a version-3 attach (raw SOCK_SEQPACKET messages, bypassing the package's
  checks), and resume_state dicts whose mix field is corrupted (another spec hash, a cursor
  missing, too few parts) — each refused with its reason while the server goes on; then each
  rank attaches with resume_state=its saved state and gets exactly the uninterrupted stream's
  batches after k (ids and tensor hashes); server B then ends cleanly (exit 0).
Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q \
     tests/python/test_served_mixture_resume.py
"""
from __future__ import annotations

import hashlib
import os
import socket
import struct
import subprocess
import sys

import pytest

from mixture_sets import make_mix

WORLD, BATCH, K = 2, 4, 3

# shm/detail/wire.h, written here from the protocol's description (not the code under test).
MAGIC, VERSION, ATTACH, REFUSE = 0x524B5453, 4, 5, 6


@pytest.fixture(scope="module")
def stoker_mod():
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        pytest.skip("STOKER_PYTHON_DIR not set")
    sys.path.insert(0, py)
    import stoker
    return stoker


@pytest.fixture(scope="module")
def mix(stoker_bin, tmp_path_factory):
    return make_mix(stoker_bin, tmp_path_factory.mktemp("smix"))


def digest(batch) -> str:
    import torch

    h = hashlib.sha256()
    # The engine's tensors; source_index is derived in the package from sources(), which a
    # served client does not have (the server owns the data).
    for name in sorted(set(batch) - {"source_index"}):
        t = batch[name]
        if not isinstance(t, torch.Tensor):
            h.update(f"{name}={t!r}".encode())
            continue
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def take(loader, n=None):
    out = []
    for b in loader:
        out.append((b["sample_ids"].tolist(), digest(b)))
        del b
        if n is not None and len(out) == n:
            break
    return out


class Server:
    def __init__(self, stoker_bin, spec, sock, env):
        self.proc = subprocess.Popen(
            [stoker_bin, "serve", str(spec), "--world-size", str(WORLD), "--socket", str(sock),
             "--model", "qwen2-vl", "--batch-size", str(BATCH), "--seed", "7", "--threads", "1",
             ], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        assert "listening on " + str(sock) in first, first + self.proc.stderr.read()[-2000:]

    def finish(self, timeout=120):
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def raw_attach(sock, message: bytes) -> str:
    """Sends one hand-made attach and returns the server's refusal reason (it must refuse)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(60)
    try:
        s.connect(str(sock))
        s.send(message)
        reply = s.recv(4096)
    finally:
        s.close()
    magic, version, kind = struct.unpack_from("=IHH", reply)
    assert (magic, version, kind) == (MAGIC, VERSION, REFUSE), reply[:16]
    (n,) = struct.unpack_from("=H", reply, 8)
    return reply[10:10 + n].decode()


def attach_msg(state: bytes, *, version=VERSION, rank=0, length=None) -> bytes:
    n = len(state) if length is None else length
    return struct.pack("=IHHiiBH", MAGIC, version, ATTACH, rank, WORLD, 1, n) + state


def test_served_mixture_resumes_from_saved_state(stoker_bin, stoker_mod, mix, tmp_path, monkeypatch):
    stoker = stoker_mod
    spec = mix / "weighted.yaml"
    monkeypatch.setenv("STOKER_CACHE_DIR", str(tmp_path / "cache"))
    env = dict(os.environ)
    sock = tmp_path / "node.sock"

    # Server A: the uninterrupted stream of each rank.
    a = Server(stoker_bin, spec, sock, env)
    try:
        full = [take(stoker.Loader(connect=str(sock), rank=r, world_size=WORLD, connect_timeout_s=60))
                for r in range(WORLD)]
        rc, out, err = a.finish()
        assert rc == 0, err[-2000:]
    finally:
        a.kill()
    assert len(full[0]) == len(full[1]) > K + 2, [len(f) for f in full]
    ids = sorted(i for f in full for b, _ in f for i in b)
    assert len(set(ids)) > 40, "a blend of the three sources"

    # The state after K batches of each rank: an in-process Loader, same data, rank and options.
    states = []
    for r in range(WORLD):
        local = stoker.Loader(data=[str(spec)], model="qwen2-vl", batch_size=BATCH, rank=r,
                              world_size=WORLD, seed=7, threads=1)
        head = take(local, K)
        assert head == full[r][:K], f"rank {r}: the in-process Loader's first batches are the served ones"
        st = local.state_dict()
        local.close()
        assert st["position"] == K * BATCH * WORLD and "mix" in st, st
        states.append(st)
    assert states[0]["mix"] == states[1]["mix"]  # the global plan's cursors: one per job

    # Server B: a fresh process.
    b = Server(stoker_bin, spec, sock, env)
    try:
        good = f"stoker-state v1 epoch=0 position={K * BATCH * WORLD} errors=0 mix={states[0]['mix']}"
        # Hostile attaches (raw messages): each refused with its reason; the server goes on.
        bad_mix = good.rsplit("mix=", 1)[0] + "mix=ZZ" + states[0]["mix"]
        assert "field 'mix' must be of 0-9 a-f w . _" in raw_attach(sock, attach_msg(bad_mix.encode()))
        long_mix = good + "0" * 4100
        assert "field 'mix' is longer than 4096 bytes" in raw_attach(sock, attach_msg(long_mix.encode()))
        assert "field 'mix' appears twice" in raw_attach(sock, attach_msg((good + " mix=" + states[0]["mix"]).encode()))
        assert "expected 'stoker-state v1" in raw_attach(sock, attach_msg(b"\xff\x00junk"))
        why = raw_attach(sock, attach_msg(b"x" * 10, length=9000))
        assert "attach refused" in why and "9000 bytes" in why and "8192" in why, why
        why = raw_attach(sock, attach_msg(b"y" * 20000))
        assert "a message of" in why and "bytes (at most" in why, why
        why = raw_attach(sock, attach_msg(good.encode(), version=3))
        assert "protocol version 3, expected 4" in why, why

        # Corrupted mix fields through the package: the server refuses the attach with a reason.
        spec_hash, mode, g, cursors = states[0]["mix"].split(".")
        flipped = ("0" if spec_hash[0] != "0" else "1") + spec_hash[1:]
        cases = [
            (f"{flipped}.{mode}.{g}.{cursors}", "the mixture changed since the state was saved"),
            (f"{spec_hash}.{mode}.{g}.{cursors.rsplit('_', 1)[0]}", "per-source cursors, this mixture has 3"),
            (f"{spec_hash}.{mode}.{int(g) * 2}.{cursors}", "global batch of 16"),
            ("abc", "field 'mix' has fewer than 4 parts"),
        ]
        for bad, reason in cases:
            with pytest.raises(stoker.StokerError) as e:
                stoker.Loader(connect=str(sock), rank=0, world_size=WORLD, connect_timeout_s=60,
                              resume_state=dict(states[0], mix=bad))
            assert reason in str(e.value), (bad, str(e.value))
        with pytest.raises(stoker.InvalidArgumentError, match=r"resume_state\['mix'\]"):
            stoker.Loader(connect=str(sock), rank=0, world_size=WORLD, resume_state=dict(states[0], mix="XYZ"))
        # Without the plan's cursors a mixture state cannot be placed: refused, as before.
        no_mix = {k: v for k, v in states[0].items() if k != "mix"}
        with pytest.raises(stoker.StokerError, match="no mix= field"):
            stoker.Loader(connect=str(sock), rank=0, world_size=WORLD, resume_state=no_mix)

        # The ranks resume from their saved states: exactly the rest of the uninterrupted stream.
        for r in range(WORLD):
            rest = take(stoker.Loader(connect=str(sock), rank=r, world_size=WORLD, connect_timeout_s=60,
                                      resume_state=states[r]))
            assert rest == full[r][K:], f"rank {r}: resumed batches differ from the uninterrupted ones"
        rc, out, err = b.finish()
        assert rc == 0, err[-2000:] + out[-2000:]
        assert "every rank finished" in out, out[-2000:]
        assert out.count("attach refused") >= len(cases) + 1, out[-3000:]
    finally:
        b.kill()
