"""Bad input never crashes `stoker preprocess`: every broken, hostile or unsupported file gives a
record {"ok": false, "code", "error"} naming the file and the reason, the other files of the same
call are still processed, and the exit status is 1 (not a signal). Also run against the
ASan/UBSan binary (ctest label `sanitize`), where a wild read or a huge allocation would abort.
"""

from __future__ import annotations

import io
import re
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

import stoker_cli

MODELS = ["qwen2.5-vl", "qwen3-vl"]


def _noise(w, h, seed=1):
    return Image.fromarray(np.random.RandomState(seed).randint(0, 256, (h, w, 3), dtype=np.uint8))


def _encoded(fmt, w=192, h=160, **kw):
    buf = io.BytesIO()
    _noise(w, h).save(buf, fmt, **kw)
    return buf.getvalue()


def _png_with_header_size(width, height):
    """A real PNG whose IHDR is patched to claim width×height (CRC fixed up)."""
    data = bytearray(_encoded("PNG", 64, 64))
    assert data[12:16] == b"IHDR"
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])) & 0xFFFFFFFF)
    return bytes(data)


def _jpeg_with_header_size(width, height):
    """A real baseline JPEG whose SOF0 segment is patched to claim width×height."""
    data = bytearray(_encoded("JPEG", 64, 64, quality=90))
    pos = data.index(b"\xff\xc0")
    data[pos + 5:pos + 9] = struct.pack(">HH", height, width)
    return bytes(data)


# name → (bytes factory, accepted error codes, regex the reason must match (case-insensitive))
CASES = {
    "empty.jpg": (lambda: b"", {"DataLoss", "InvalidArgument"}, r"empty|no data|0 bytes|truncat"),
    "garbage.png": (lambda: np.random.RandomState(7).bytes(4096),
                    {"InvalidArgument", "DataLoss"}, r"unsupported|unknown|format|not an image|corrupt|signature"),
    "truncated.jpg": (lambda: _encoded("JPEG", quality=95)[:3000], {"DataLoss"},
                      r"truncat|premature|corrupt|incomplete|end of"),
    "truncated_header.jpg": (lambda: _encoded("JPEG")[:120], {"DataLoss", "InvalidArgument"},
                             r"truncat|premature|corrupt|header|end of"),
    "truncated.png": (lambda: _encoded("PNG")[:20000], {"DataLoss"},
                      r"truncat|premature|corrupt|incomplete|end of|eof"),
    "truncated.webp": (lambda: _encoded("WEBP", quality=90)[:1500], {"DataLoss"},
                       r"truncat|not enough|corrupt|incomplete|end of"),
    "bomb_60000.png": (lambda: _png_with_header_size(60000, 60000), {"ResourceExhausted"},
                       r"pixel|limit|large|bomb"),
    "bomb_60000.jpg": (lambda: _jpeg_with_header_size(60000, 60000), {"ResourceExhausted"},
                       r"pixel|limit|large|bomb"),
    # Sides below patch x merge are fine since transformers 4.53 (test_small_images_are_accepted);
    # 4000x16 is refused for its aspect ratio (250 > 200), not its size.
    "wide_4000x16.png": (lambda: _encoded("PNG", 4000, 16), {"InvalidArgument"}, r"aspect"),
    "aspect_7000x33.png": (lambda: _encoded("PNG", 7000, 33), {"InvalidArgument"},
                           r"aspect"),
    "image.gif": (lambda: _encoded("GIF"), {"InvalidArgument"}, r"unsupported|format|gif"),
    "image.bmp": (lambda: _encoded("BMP"), {"InvalidArgument"}, r"unsupported|format|bmp"),
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    out = {}
    for name, (make, _, _) in CASES.items():
        p = d / name
        p.write_bytes(make())
        out[name] = p
    good = d / "good.png"
    _noise(120, 90).save(good)
    return d, out, good


def _check_failure(rec, path, codes, reason):
    assert rec.get("ok") is False, f"{path.name}: expected ok:false, got {rec}"
    assert rec.get("file") == str(path), f"record does not name the file: {rec}"
    assert rec.get("code") in codes, f"{path.name}: code {rec.get('code')} not in {codes}: {rec}"
    err = rec.get("error", "")
    assert err and re.search(reason, err, re.I), f"{path.name}: unclear reason {err!r}"
    assert path.name in err, f"the error does not name the file: {err!r}"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("model", MODELS)
def test_bad_file_gives_clear_error(stoker_bin, bad_files, name, model):
    _, files, _ = bad_files
    path = files[name]
    _, codes, reason = CASES[name]
    res = stoker_cli.preprocess(stoker_bin, model, [path])
    assert res.returncode == 1, f"{name}: exit {res.returncode} (negative = signal)\n{res.stderr[-3000:]}"
    assert len(res.records) == 1, res
    _check_failure(res.records[0], path, codes, reason)


def test_bad_files_do_not_stop_good_ones(stoker_bin, bad_files, tmp_path):
    """One call with every bad file around a good one: one record each, in order; the good file
    (and its dumps) are produced; exit status 1."""
    _, files, good = bad_files
    order = [good] + [files[n] for n in sorted(CASES)] + [good]
    res = stoker_cli.preprocess(stoker_bin, "qwen2.5-vl", order, dump_dir=tmp_path)
    assert res.returncode == 1, f"exit {res.returncode}\n{res.stderr[-3000:]}"
    assert [r.get("file") for r in res.records] == [str(p) for p in order]
    assert res.records[0]["ok"] and res.records[-1]["ok"]
    for i, p in enumerate(order[1:-1], start=1):
        _, codes, reason = CASES[p.name]
        _check_failure(res.records[i], p, codes, reason)
    last = len(order) - 1
    for i in (0, last):
        resized = np.load(tmp_path / f"{i}.resized.npy")
        assert resized.shape == (res.records[i]["resized_height"], res.records[i]["resized_width"], 3)
        pv = np.load(tmp_path / f"{i}.pixel_values.npy")
        assert pv.shape == (res.records[i]["rows"], res.records[i]["cols"])


def test_small_images_are_accepted(stoker_bin, tmp_path):
    """1x1 and a 3200x16 strip (aspect exactly 200) come out with transformers >= 4.53's grids
    (spec §1.1 step 2: step 5 enlarges them); `--small-images refuse` restores the <= 4.52
    refusal, naming the file and the rule."""
    one, strip = tmp_path / "one_pixel.png", tmp_path / "strip_3200x16.png"
    one.write_bytes(_encoded("PNG", 1, 1))
    strip.write_bytes(_encoded("PNG", 3200, 16))
    # 1x1: beta = sqrt(min_pixels) → 56² (Qwen2.5) / 256² (Qwen3). 3200x16: step 3 gives
    # 28 x 3192 (Qwen2.5) / 32 x 3648 (Qwen3), inside the bounds, so no rescale.
    for model, grids in [("qwen2.5-vl", [[1, 4, 4], [1, 2, 228]]),
                         ("qwen3-vl", [[1, 16, 16], [1, 2, 228]])]:
        res = stoker_cli.preprocess(stoker_bin, model, [one, strip])
        assert res.returncode == 0, res.stderr[-3000:]
        assert [r["grid"] for r in res.records] == grids, res.records
        legacy = stoker_cli.preprocess(stoker_bin, model, [one, strip], extra=["--small-images", "refuse"])
        assert legacy.returncode == 1
        for rec, path in zip(legacy.records, [one, strip]):
            _check_failure(rec, path, {"InvalidArgument"}, r"factor")


def test_missing_file(stoker_bin, tmp_path):
    path = tmp_path / "does_not_exist.jpg"
    res = stoker_cli.preprocess(stoker_bin, "qwen2.5-vl", [path])
    assert res.returncode == 1, res.stderr
    _check_failure(res.records[0], path, {"NotFound"}, r"not found|no such|exist")


def test_all_good_exits_zero(stoker_bin, bad_files):
    _, _, good = bad_files
    res = stoker_cli.preprocess(stoker_bin, "qwen3-vl", [good])
    assert res.returncode == 0, res.stderr
    assert res.records[0]["ok"] is True


def _mutants(root, per_source=15, seed=5):
    """Valid JPEG (baseline, progressive), PNG (plain, interlaced) and WebP (lossy, lossless+alpha)
    files with bit flips, truncations at random offsets, or overwritten byte runs."""
    import random
    rng = random.Random(seed)
    rs = np.random.RandomState(seed)
    y, x = np.mgrid[0:120, 0:160]
    base = np.stack([x * 255 // 159, y * 255 // 119, (x * y) & 255], -1)
    img = Image.fromarray(np.clip(base + rs.randint(-20, 20, base.shape), 0, 255).astype(np.uint8))
    sources = []
    for fmt, kw, ext, im in [("JPEG", {}, "jpg", img), ("JPEG", {"progressive": True}, "jpg", img),
                             ("PNG", {}, "png", img), ("PNG", {"interlace": 1}, "png", img),
                             ("WEBP", {"quality": 80}, "webp", img),
                             ("WEBP", {"lossless": True}, "webp", img.convert("RGBA"))]:
        buf = io.BytesIO()
        im.save(buf, fmt, **kw)
        sources.append((f"{fmt.lower()}{len(sources)}.{ext}", buf.getvalue()))
    files = []
    for name, data in sources:
        for k in range(per_source):
            d = bytearray(data)
            if k % 3 == 0:
                for _ in range(rng.randint(1, 8)):
                    i = rng.randrange(len(d))
                    d[i] ^= 1 << rng.randrange(8)
            elif k % 3 == 1:
                d = d[:rng.randrange(1, len(d))]
            else:
                i = rng.randrange(len(d))
                n = min(rng.randint(1, 64), len(d) - i)
                d[i:i + n] = bytes(rng.randrange(256) for _ in range(n))
            p = root / f"mutant_{len(files):03d}_{name}"
            p.write_bytes(bytes(d))
            files.append(p)
    return files


def test_mutated_files_never_crash_and_never_differ(stoker_bin, tmp_path):
    """90 damaged files in one call: no signal, one record each; a rejected file names itself;
    an accepted file is one Pillow also decodes, to the same resized pixels. (stoker is stricter
    than Pillow: it refuses JPEGs libjpeg only warns about, which Pillow decodes to garbage.)"""
    import hf_image_reference as ref
    (tmp_path / "in").mkdir()
    files = _mutants(tmp_path / "in")
    dump = tmp_path / "dump"
    dump.mkdir()
    res = stoker_cli.preprocess(stoker_bin, "qwen2.5-vl", files, dump_dir=dump)
    assert res.returncode in (0, 1), f"exit {res.returncode}\n{res.stderr[-3000:]}"
    assert [r.get("file") for r in res.records] == [str(p) for p in files]
    accepted = 0
    for i, (p, rec) in enumerate(zip(files, res.records)):
        if not rec["ok"]:
            assert rec.get("code") and p.name in rec.get("error", ""), rec
            continue
        accepted += 1
        expect = ref.process_file(p, ref.MODELS["qwen2.5-vl"])  # raises if Pillow cannot
        resized = np.load(dump / f"{i}.resized.npy")
        assert np.array_equal(resized, expect.resized), f"{p.name}: accepted, differs from Pillow"
    print(f"{len(files)} mutated files: {accepted} accepted (== Pillow), "
          f"{len(files) - accepted} rejected")
