"""`stoker render` against the bad-input kinds (issue 30 §3). render used to read a record's images
with a plain whole-file read: `../../../etc/passwd` was read, a FIFO hung it, a 2 GiB sparse file
was read whole and /dev/zero aborted it with std::bad_alloc. Now the record file and its images go
through the same store, trust boundary and caps as `stoker run` and `stoker inspect`.
For every path, special-file and sparse kind of bad_input_kinds.py (the record file holding that
kind's record, beside the dataset's files) and for hostile record files themselves (a FIFO,
/dev/zero, a 2 GiB sparse file, a folder, a missing file): render exits non-zero (1 or 2, never a
signal) within a time bound, with the error code run expects and a reason.
Cheap (~60 renders of a few ms each): also under ASan/UBSan."""
from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

import bad_input_kinds as kinds
import bad_input_media as media

BOUND_S = 10.0  # per render; the old code hung on the FIFO, read 2 GiB, aborted on /dev/zero
# A video part is not read by render (fixed --video-grid): nothing to refuse there.
NOT_READ = {"video_passwd"}


def render(stoker_bin, path, *extra):
    t0 = time.monotonic()
    try:
        r = subprocess.run([stoker_bin, "render", str(path), *extra],
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None, 30.0
    return r, time.monotonic() - t0


def image_kinds(ds):
    out = []
    for build in (kinds.path_kinds, kinds.special_kinds, kinds.fifo_kinds, kinds.sparse_kinds):
        out += [k for k in build(ds) if k.name not in NOT_READ]
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    ds = tmp_path_factory.mktemp("render") / "ds"
    ds.mkdir()
    ks = image_kinds(ds)
    for k in ks:
        (ds / f"kind-{k.name}.json").write_bytes(k.line)
    return ds, ks


def problem(r, elapsed, codes, reason, what):
    """Why this render is wrong (None when it failed as it should)."""
    if r is None:
        return f"{what}: still running after 30 s"
    tail = r.stderr.strip().splitlines()[-1][:200] if r.stderr.strip() else ""
    if r.returncode <= 0:
        return f"{what}: exit {r.returncode} after {elapsed:.1f} s {tail}"
    if "bad_alloc" in r.stderr or "terminate called" in r.stderr:
        return f"{what}: {tail}"
    if elapsed >= BOUND_S:
        return f"{what}: {elapsed:.1f} s"
    m = re.match(r"stoker render: (\w+): ", tail)
    if not (m and m.group(1) in codes):
        return f"{what}: want {sorted(codes)}, got: {tail}"
    if not re.search(reason, r.stderr, re.I):
        return f"{what}: reason /{reason}/ not in: {tail}"
    return None


def check(r, elapsed, codes, reason, what):
    bad = problem(r, elapsed, codes, reason, what)
    assert bad is None, bad


def test_each_bad_image_reference_fails_fast_and_clearly(stoker_bin, dataset):
    ds, ks = dataset
    assert len(ks) >= 25
    slowest, bad = 0.0, []
    for k in ks:
        r, elapsed = render(stoker_bin, ds / f"kind-{k.name}.json")
        bad.append(problem(r, elapsed, k.expect.codes, k.expect.reason, k.name))
        slowest = max(slowest, elapsed)
    bad = [b for b in bad if b]
    print(f"\n{len(ks)} kinds, {len(ks) - len(bad)} refused as run refuses them, slowest "
          f"{slowest:.2f} s")
    assert not bad, "\n".join(bad)


def test_hostile_record_files(stoker_bin, tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.json"
    media.sparse_file(sparse, 2 << 30, b'{"messages": []}')
    folder = tmp_path / "folder.json"
    folder.mkdir()
    cases = [
        (fifo, {"InvalidArgument"}, r"regular file", "a FIFO as the record"),
        ("/dev/zero", {"InvalidArgument"}, r"regular file", "/dev/zero as the record"),
        (sparse, {"ResourceExhausted"}, r"bytes", "a 2 GiB sparse record file"),
        (folder, {"InvalidArgument"}, r"regular file|directory", "a folder as the record"),
        (tmp_path / "absent.json", {"NotFound"}, r"no such|not found", "a missing record"),
    ]
    bad = []
    for path, codes, reason, what in cases:
        r, elapsed = render(stoker_bin, path)
        bad.append(problem(r, elapsed, codes, reason, what))
    bad = [b for b in bad if b]
    assert not bad, "\n".join(bad)
    # The cap is --max-record-bytes: a record over it fails, naming the size.
    big = tmp_path / "big.json"
    big.write_bytes(b'{"messages": [' + b" " * 5000 + b"]}")
    r, elapsed = render(stoker_bin, big, "--max-record-bytes", "4096")
    check(r, elapsed, {"ResourceExhausted"}, r"4096", "a record over --max-record-bytes")


def test_a_good_record_still_renders_and_media_root_widens_the_boundary(stoker_bin, tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "ok.png").write_bytes(media.png(96, 80, seed=3))
    out = tmp_path / "outside"
    out.mkdir()
    (out / "o.png").write_bytes(media.png(64, 64, seed=4))
    (ds / "r.json").write_bytes(kinds.msgs(
        ("user", [kinds.img("ok.png"), kinds.img("../outside/o.png"), {"type": "text", "text": "?"}]),
        ("assistant", "A test picture.")))
    r = subprocess.run([stoker_bin, "render", str(ds / "r.json")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "PermissionDenied" in r.stderr, r.stderr
    r = subprocess.run([stoker_bin, "render", str(ds / "r.json"), "--media-root", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "2 image(s)" in r.stdout, r.stdout[-2000:]
