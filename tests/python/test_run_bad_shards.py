"""Hostile shards through `stoker run` and `stoker.Loader` (ctest `run_bad_shards`, issue 23;
the shard half of the bad-input suite, same harness and judge as run_bad_local): each kind is a
WebDataset shard list (or an Energon folder) of good samples plus one hostile thing, written here
with Python's tarfile/pickle (independent of stoker's writer). Per kind and runner: no crash, no
hang; either the hostile sample fails alone with a report line naming its shard and sample
number (code, reason) and every good sample is delivered — or, for what makes the data
unusable, the run is refused at start with a reason naming the file, in bounded time.
The kinds × outcome table goes to <build>/tests/bad_input_shards.md (STOKER_BAD_SHARDS_TABLE).
Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q \
     tests/python/test_run_bad_shards.py
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import pickle
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import pytest

import bad_input_harness as h

RUNNERS = ["run"] if h.SANITIZED else ["run", "loader"]
GOOD_A = 6  # samples of the good first shard
TABLE = None


def pytest_terminal_summary_lines():
    return TABLE.lines() if TABLE is not None else []


@dataclass
class Sample:
    key: str
    members: List[tuple]  # (name, bytes)


def read_samples(shard: pathlib.Path) -> List[Sample]:
    out: List[Sample] = []
    with tarfile.open(shard) as t:
        for m in t:
            if not m.isfile():
                continue
            key = m.name.split(".")[0]
            data = t.extractfile(m).read()
            if out and out[-1].key == key:
                out[-1].members.append((m.name, data))
            else:
                out.append(Sample(key, [(m.name, data)]))
    return out


def write_tar(path: pathlib.Path, members) -> List[int]:
    """Writes members [(name, bytes)] with tarfile (GNU format); returns each header's offset."""
    offsets = []
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            offsets.append(t.offset)
            t.addfile(ti, io.BytesIO(data))
    return offsets


def members_of(samples: List[Sample]):
    return [m for s in samples for m in s.members]


@dataclass
class ShardKind:
    name: str
    what: str
    build: Callable  # (dir, samples) -> (data spec, bad shard path, bad index k or None, good ids)
    expect: h.Expect = None
    refuse: str = ""  # a regex: the run must be refused at start with this reason
    extra_run: List[str] = field(default_factory=list)
    extra_loader: dict = field(default_factory=dict)


def _two_shards(d, samples, bad_members, bad_good_ids):
    """Shard a.tar (GOOD_A good samples) then b.tar (the hostile one)."""
    write_tar(d / "a.tar", members_of(samples[:GOOD_A]))
    write_tar(d / "b.tar", bad_members)
    return str(d / "{a,b}.tar"), str(d / "b.tar"), [*range(GOOD_A), *(GOOD_A + i for i in bad_good_ids)]


def k_truncated(d, s):
    b = s[GOOD_A:GOOD_A + 5]
    offs = write_tar(d / "b.tar", members_of(b))
    # cut inside the data of sample 3's first member
    first3 = len(members_of(b[:3]))
    data = (d / "b.tar").read_bytes()[:offs[first3] + 512 + 100]
    (d / "b.tar").write_bytes(data)
    write_tar(d / "a.tar", members_of(s[:GOOD_A]))
    return str(d / "{a,b}.tar"), str(d / "b.tar"), 3, [*range(GOOD_A), *(GOOD_A + i for i in range(3))]


def k_checksum(d, s):
    b = s[GOOD_A:GOOD_A + 5]
    offs = write_tar(d / "b.tar", members_of(b))
    raw = bytearray((d / "b.tar").read_bytes())
    at = offs[len(members_of(b[:2]))]  # sample 2's first header
    raw[at + 5] ^= 0x20  # a byte of the name: the checksum no longer matches
    (d / "b.tar").write_bytes(bytes(raw))
    write_tar(d / "a.tar", members_of(s[:GOOD_A]))
    # The unreadable header may belong to the sample in progress (its name cannot be trusted):
    # sample 1 fails as possibly incomplete; samples 2.. are beyond the damage.
    return str(d / "{a,b}.tar"), str(d / "b.tar"), 1, [*range(GOOD_A), GOOD_A + 0]


def k_over_cap(d, s):
    b = [Sample(x.key, list(x.members)) for x in s[GOOD_A:GOOD_A + 4]]
    b[1].members.append((b[1].key + ".blob.bin", os.urandom(300 << 10)))
    spec, bad, good = _two_shards(d, s, members_of(b), [0, 2, 3])
    return spec, bad, 1, good


def k_split_key(d, s):
    b = s[GOOD_A:GOOD_A + 4]
    m = members_of(b[:1])
    # sample 0's first member, then sample 1, then sample 0's other members
    members = [m[0], *members_of(b[1:2]), *m[1:], *members_of(b[2:])]
    spec, bad, good = _two_shards(d, s, members, [3])  # samples: 0, 1, 0', 2, 3 -> 0 and 2 fail
    return spec, bad, 0, [*range(GOOD_A), GOOD_A + 1, GOOD_A + 3, GOOD_A + 4]


def k_same_key(d, s):
    b = [Sample(x.key, list(x.members)) for x in s[GOOD_A:GOOD_A + 4]]
    twin = Sample(b[0].key, list(b[3].members))
    twin.members = [(b[0].key + n[len(b[3].key):], data) for n, data in b[3].members]
    members = members_of(b[:3]) + members_of([twin])
    spec, bad, good = _two_shards(d, s, members, [])
    return spec, bad, 0, [*range(GOOD_A), GOOD_A + 1, GOOD_A + 2]


def k_bad_index(d, s):
    b = s[GOOD_A:GOOD_A + 5]
    offs = write_tar(d / "b.tar", members_of(b))
    starts = [offs[len(members_of(b[:i]))] for i in range(5)]
    with tarfile.open(d / "b.tar") as t:
        for _ in t:
            pass
        end = t.offset
    idx = [o for i, o in enumerate(starts) if i != 2] + [end]  # samples 1 and 2 merged
    (d / "b.tar.idx").write_bytes(b"".join(x.to_bytes(8, "little") for x in idx))
    write_tar(d / "a.tar", members_of(s[:GOOD_A]))
    # the index's sample 1 covers two samples: it fails; 2, 3 are the shard's 3, 4
    return str(d / "{a,b}.tar"), str(d / "b.tar"), 1, [*range(GOOD_A), GOOD_A + 0, GOOD_A + 2, GOOD_A + 3]


def k_jsonl_idx_stale(d, s):
    """Energon's .jsonl.idx written (struct-style, little-endian uint64) for the first 4 records,
    then a fifth appended to the JSONL: the index ends before the file does."""
    recs = [json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                     {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(5)]
    offs, o = [], 0
    for r in recs[:4]:
        offs.append(o)
        o += len(r.encode())
    offs.append(o)
    (d / "data.jsonl").write_text("".join(recs))
    (d / "data.jsonl.idx").write_bytes(b"".join(x.to_bytes(8, "little") for x in offs))
    return str(d / "data.jsonl"), "", None, []


def k_missing_shard(d, s):
    write_tar(d / "a.tar", members_of(s[:GOOD_A]))
    return str(d / "{a,b}.tar"), str(d / "b.tar"), None, []


def k_million(d, s):
    write_tar(d / "a.tar", members_of(s[:GOOD_A]))
    return str(d / "x-{0000000..0999999}.tar"), "", None, []


def _energon(d, s, shards, info=None, split=None, dataset=None):
    meta = d / ".nv-meta"
    (d / "shards").mkdir(parents=True, exist_ok=True)
    meta.mkdir(parents=True, exist_ok=True)
    for name, members in shards:
        write_tar(d / "shards" / name, members)
    (meta / "dataset.yaml").write_text(dataset or "__module__: megatron.energon\n__class__: CrudeWebdataset\n")
    names = [f"shards/{n}" for n, _ in shards]
    (meta / "split.yaml").write_text(split or ("split_parts:\n  train:\n" + "".join(f"  - {n}\n" for n in names)))
    counts = info or {f"shards/{n}": len(read_samples(d / "shards" / n)) for n, _ in shards}
    (meta / ".info.json").write_text(json.dumps({"energon_version": "7.4.0", "shard_counts": counts}))
    return str(d)


def k_energon_missing(d, s):
    _energon(d, s, [("a.tar", members_of(s[:GOOD_A])), ("b.tar", members_of(s[GOOD_A:GOOD_A + 3]))])
    (d / "shards" / "b.tar").unlink()
    return str(d), str(d / "shards" / "b.tar"), 0, list(range(GOOD_A))


def k_energon_bad_yaml(d, s):
    _energon(d, s, [("a.tar", members_of(s[:GOOD_A]))],
             dataset="__module__: megatron.energon\n__class__: [CrudeWebdataset\n")
    return str(d), "", None, []


def k_energon_bad_info(d, s):
    _energon(d, s, [("a.tar", members_of(s[:GOOD_A]))])
    (d / ".nv-meta" / ".info.json").write_text('{"energon_version": "7.4.0", "shard_counts": {"shards/a.tar": ')
    return str(d), "", None, []


def k_energon_empty_split(d, s):
    _energon(d, s, [("a.tar", members_of(s[:GOOD_A]))],
             split="split_parts:\n  train:\n  - shards/a.tar\nexclude:\n  - shards/a.tar\n")
    return str(d), "", None, []


def k_pickle(d, s):
    """A ChatMLWebdataset folder: conversation + jpgs (a pickled list of JPEG bytes); sample 1's
    pickle calls a global (os.system through REDUCE): a pickle is code, never run."""
    def chatml(sample, payload):
        conv = [{"from": "human", "value": "<image>\nWhat is this?"}, {"from": "gpt", "value": "A test."}]
        return [(sample.key + ".conversation.json", json.dumps(conv).encode()),
                (sample.key + ".jpgs", payload)]

    img = next(data for n, data in members_of(s) if n.endswith(".jpg"))

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    members = []
    for i, x in enumerate(s[:5]):
        payload = pickle.dumps([Evil()] if i == 1 else [img], protocol=4)
        members += chatml(x, payload)
    ds = ("__module__: megatron.bridge.data.energon.task_encoder_utils\n__class__: ChatMLWebdataset\n"
          "field_map:\n  imgs: jpgs\n  conversation: conversation.json\n")
    _energon(d, s, [("a.tar", members)], dataset=ds)
    return str(d), str(d / "shards" / "a.tar"), 1, [0, 2, 3, 4]


KINDS = [
    ShardKind("truncated-tar", "the shard ends inside a member's data", k_truncated,
              h.fails("DataLoss", r"b\.tar.*(truncat|ends)")),
    ShardKind("bad-header-checksum", "a member header's checksum is wrong", k_checksum,
              h.fails("DataLoss", r"b\.tar.*checksum")),
    ShardKind("member-over-cap", "a 300 KiB member with --max-object-bytes 256k", k_over_cap,
              h.fails("ResourceExhausted", r"b\.tar.*(over|larger|exceed)"),
              extra_run=["--max-object-bytes", "256k"], extra_loader={"max_object_bytes": 256 << 10}),
    ShardKind("key-split", "a key's members are not adjacent (another sample between)", k_split_key,
              h.fails("DataLoss", r"b\.tar.*adjacent")),
    ShardKind("key-twice", "the same key in two samples of a shard", k_same_key,
              h.fails("DataLoss", r"b\.tar.*(adjacent|unique|twice)")),
    ShardKind("index-disagrees", ".tar.idx merges two samples into one range", k_bad_index,
              h.fails("DataLoss", r"b\.tar.*index disagrees")),
    ShardKind("jsonl-idx-stale", "a .jsonl.idx that ends before its JSONL (a record appended since)",
              k_jsonl_idx_stale, refuse=r"data\.jsonl\.idx.*(stale|disagrees)"),
    ShardKind("missing-shard", "a shard of a plain list does not exist", k_missing_shard,
              refuse=r"b\.tar"),
    ShardKind("brace-million", "the shard list expands to 1,000,000 names", k_million,
              refuse=r"(names|expands|more than)"),
    ShardKind("energon-missing-shard", "a split shard of an Energon folder is missing", k_energon_missing,
              h.fails("NotFound", r"b\.tar")),
    ShardKind("energon-bad-yaml", ".nv-meta/dataset.yaml is malformed YAML", k_energon_bad_yaml,
              refuse=r"dataset\.yaml:\d+:\d+"),
    ShardKind("energon-bad-info", ".nv-meta/.info.json is truncated JSON", k_energon_bad_info,
              refuse=r"\.info\.json"),
    ShardKind("energon-empty-split", "the split's only shard is excluded: nothing left", k_energon_empty_split,
              refuse=r"(empty|no shard|nothing)"),
    ShardKind("pickle-global", "jpgs pickle calls os.system (REDUCE of a global)", k_pickle,
              h.fails(("InvalidArgument", "DataLoss", "PermissionDenied"), r"a\.tar.*(opcode|GLOBAL|REDUCE)")),
]


@pytest.fixture(scope="module")
def samples(stoker_bin, tmp_path_factory):
    global TABLE
    out = os.environ.get("STOKER_BAD_SHARDS_TABLE") or \
        str(tmp_path_factory.getbasetemp().parent / "bad_input_shards.md")
    TABLE = h.Table(pathlib.Path(out), "bad input, shards (stoker run / stoker.Loader)")
    d = tmp_path_factory.mktemp("synth")
    subprocess.run([stoker_bin, "synth", "--out", str(d), "--n", "16", "--seed", "4", "--max-side", "96",
                    "--shards", "1"], check=True, capture_output=True)
    s = read_samples(d / "shards" / "data-000.tar")
    assert len(s) == 16
    return s


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_bad_shard(stoker_bin, samples, tmp_path, kind, runner):
    if runner == "loader" and h.python_dir() is None:
        pytest.skip("the _stoker extension is not built")
    d = tmp_path / "data"
    d.mkdir()
    spec, bad, k, good = kind.build(d, samples)
    env = dict(os.environ, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    line = (k + 1) if k is not None else 0
    sid = (GOOD_A + k if bad.endswith("b.tar") else k) if k is not None else -1
    layout = h.Layout(spec, bad or spec, {kind.name: (sid, line)}, good)
    work = tmp_path / runner
    if runner == "run":
        res = h.run_stoker(stoker_bin, layout, work, extra=kind.extra_run, env=env, timeout=60)
    else:
        res = h.run_loader(layout, work, options=kind.extra_loader or None, env=env, timeout=60)
    if kind.refuse:
        outcome, detail = _judge_refusal(kind, res)
    else:
        hk = h.Kind(kind.name, b"", kind.expect, kind.what)
        outcome, detail = h.judge(hk, layout, res, rss_bound_kb=1 << 30)
    TABLE.record(h.Kind(kind.name, b"", kind.expect or h.fails("refused", kind.refuse), kind.what),
                 "shards", runner, outcome, detail, res, layout)
    assert outcome == "ok", f"{kind.name} ({runner}): {outcome}: {detail}"


def _judge_refusal(kind: ShardKind, res: h.RunResult):
    if res.crashed:
        return "crash", res.stderr[-1500:]
    if res.timed_out:
        return "hang", f"killed after {res.wall_s:.0f} s"
    if res.rc == 0:
        return "not refused", f"{len(res.delivered)} delivered"
    if res.delivered:
        return "delivered before refusing", str(res.delivered[:5])
    if res.wall_s > 20 * h.SLOW:
        return "slow", f"{res.wall_s:.1f} s"
    if not re.search(kind.refuse, res.error, re.I):
        return "wrong reason", res.error[-300:]
    return "ok", res.error.strip().splitlines()[-1][:200] if res.error.strip() else ""
