"""EXIF orientation and small images: `stoker preprocess` against Pillow 9.4 + numpy.

The reference (hf_image_reference) is transformers' load_image — `ImageOps.exif_transpose`,
then `convert("RGB")` — followed by the slow processor with transformers >= 4.53's smart_resize.
Asserted per file and model: orientation, sizes, grid, tokens, the resized uint8 image and
pixel_values bit-identical; where Pillow raises (malformed EXIF), stoker refuses the file and
names it. Files are written by Pillow itself (JPEG/PNG/WebP with `exif=`), or Pillow-written
files with metadata spliced in byte by byte for the cases Pillow cannot write.
"""

from __future__ import annotations

import io
import random
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageOps

import hf_image_reference as ref
import stoker_cli

# Pillow warns on every corrupt block it reads (the point of these files).
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]
TRANSPOSE = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
             4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
             6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
             8: Image.Transpose.ROTATE_90}
REPORT: list[str] = []


def pytest_terminal_summary_lines():
    return REPORT


def photo(w, h, seed=0) -> Image.Image:
    rs = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(1, w - 1), y * 255 // max(1, h - 1), (x * 7 + y * 3) & 255], -1)
    return Image.fromarray(np.clip(base + rs.randint(-30, 30, (h, w, 3)), 0, 255).astype(np.uint8))


def exif_block(orientation, little_endian=False) -> bytes:
    """Pillow's own EXIF writer: b"Exif\\0\\0" + TIFF with IFD0 {Orientation: o}."""
    ex = Image.Exif()
    if little_endian:
        ex.endian = "<"
    ex[0x0112] = orientation
    return ex.tobytes()


def tiff(entries, little=True, extra=b"") -> bytes:
    """A TIFF block by hand (types Pillow's writer would not produce). entries: (tag, type,
    count, 4 value bytes); extra: out-of-line data placed after the IFD."""
    e = "<" if little else ">"
    out = (b"II*\0" if little else b"MM\0*") + struct.pack(e + "L", 8) + struct.pack(e + "H", len(entries))
    for tag, typ, count, val in entries:
        out += struct.pack(e + "HHL", tag, typ, count) + val
    return out + struct.pack(e + "L", 0) + extra


def short(v, little=True) -> bytes:
    return struct.pack("<H" if little else ">H", v) + b"\0\0"


def save(img, fmt, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def jpeg_with(app_segments, dpi=False, img=None) -> bytes:
    """A Pillow JPEG (its JFIF APP0 first; density in dots per inch when dpi) with APP segments
    (marker, payload) inserted after that APP0."""
    data = save(img or photo(23, 17, 1), "JPEG", quality=92, **({"dpi": (72, 72)} if dpi else {}))
    n = struct.unpack(">H", data[4:6])[0]
    segs = b"".join(bytes([0xFF, m]) + struct.pack(">H", len(p) + 2) + p for m, p in app_segments)
    return data[:4 + n] + segs + data[4 + n:]


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_with(pre=(), post=(), img=None) -> bytes:
    data = save(img or photo(23, 17, 2), "PNG")
    end = len(data) - 12
    return data[:33] + b"".join(pre) + data[33:end] + b"".join(post) + data[end:]


def pillow_reference(path, spec, exif=True, rules="current"):
    """(status, Processed or None). status: "ok"; "raises" (Pillow raises opening it or in
    exif_transpose: transformers fails); "rewrite" (the transposed pixels exist, but Pillow 9.4's
    exif_transpose then raises re-serialising the EXIF block (Exif.tobytes on a tag whose stored
    type contradicts its tag table) — stoker keeps the pixels: README.md, known divergence)."""
    try:
        return "ok", ref.process_file(path, spec, exif, rules)
    except ValueError as e:
        if "aspect" in str(e) or "factor" in str(e) or "empty target" in str(e):
            return "refused", None
        err = e
    except Exception as e:  # noqa: BLE001 — whatever Pillow raises
        err = e
    try:
        with Image.open(path) as im:
            method = TRANSPOSE.get(im.getexif().get(0x0112))
            if method is None:
                raise err
            rgb = np.asarray(im.transpose(method).convert("RGB"), dtype=np.uint8)
        return "rewrite", ref.process_rgb(rgb, spec, rules)
    except Exception:  # noqa: BLE001
        return "raises", None


def run_and_compare(stoker_bin, tmp_path, model, files, exif=True, rules="current", extra=()):
    """Runs stoker on `files`, compares each with the reference; returns outcome counts."""
    spec = ref.MODELS[model]
    dump = tmp_path / f"dump-{model}-{exif}-{rules}"
    dump.mkdir(exist_ok=True)
    flags = list(extra) + ["--exif", "apply" if exif else "ignore",
                           "--small-images", "resize" if rules == "current" else "refuse"]
    res = stoker_cli.preprocess(stoker_bin, model, files, dump_dir=dump, extra=flags)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    assert [r["file"] for r in res.records] == [str(f) for f in files], res.stderr[-2000:]
    counts: dict[str, int] = {}
    failures = []
    for i, (path, rec) in enumerate(zip(files, res.records)):
        status, r = pillow_reference(path, spec, exif, rules)
        counts[status] = counts.get(status, 0) + 1
        where = f"{path.name} {model} exif={exif} rules={rules}"
        if status in ("raises", "refused"):
            if rec["ok"] or path.name not in rec.get("error", ""):
                failures.append(f"{where}: Pillow/transformers {status}, stoker {rec}")
            continue
        if not rec["ok"]:
            failures.append(f"{where}: stoker failed: {rec}")
            continue
        expect = {"width": r.width, "height": r.height, "resized_width": r.resized_width,
                  "resized_height": r.resized_height, "grid": list(r.grid),
                  "tokens": r.tokens(spec.merge_size)}
        got = {k: rec[k] for k in expect}
        if got != expect:
            failures.append(f"{where}: {got} != {expect}")
            continue
        resized = np.load(dump / f"{i}.resized.npy")
        pv = np.load(dump / f"{i}.pixel_values.npy")
        if not np.array_equal(resized, r.resized) or not np.array_equal(pv, r.pixel_values):
            failures.append(f"{where}: pixels differ from the reference")
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])
    return counts, res.records


def orientation_files(root):
    """Orientations 1..8 in every container Pillow 9.4 writes EXIF into, on non-square images."""
    files, expect = [], []
    for o in range(1, 9):
        img = photo(75, 41, o)
        big = photo(333, 210, o)
        cases = [
            ("jpeg_mm", save(img, "JPEG", quality=90, exif=exif_block(o))),
            ("jpeg_ii", save(img, "JPEG", quality=90, exif=exif_block(o, True))),
            ("jpeg_prog", save(big, "JPEG", quality=85, progressive=True, exif=exif_block(o))),
            ("png_exif", save(img, "PNG", exif=exif_block(o))),
            ("png_exif_after_idat", png_with(post=[chunk(b"eXIf", exif_block(o)[6:])], img=img)),
            ("webp_lossless", save(img, "WEBP", lossless=True, exif=exif_block(o))),
            ("webp_lossy", save(big, "WEBP", quality=80, exif=exif_block(o))),
        ]
        for name, data in cases:
            p = root / f"o{o}_{name}.{name.split('_')[0].replace('jpeg', 'jpg')}"
            p.write_bytes(data)
            files.append(p)
            expect.append(o)
    return files, expect


@pytest.mark.parametrize("model", MODELS)
def test_orientations_match_exif_transpose(stoker_bin, tmp_path, model):
    files, expect = orientation_files(tmp_path)
    with Image.open(files[5 * 7]) as im:  # an orientation-6 JPEG really is stored unrotated
        assert im.size == (75, 41) and ImageOps.exif_transpose(im).size == (41, 75)
    counts, records = run_and_compare(stoker_bin, tmp_path, model, files)
    assert counts == {"ok": len(files)}
    assert [r["orientation"] for r in records] == expect
    # --exif ignore: the stored pixels (Image.open alone), orientation 1 everywhere.
    counts, records = run_and_compare(stoker_bin, tmp_path, model, files, exif=False)
    assert counts == {"ok": len(files)} and {r["orientation"] for r in records} == {1}
    REPORT.append(f"exif {model}: {len(files)} files (orientations 1-8; JPEG MM/II/progressive, "
                  "PNG eXIf before/after IDAT, WebP lossy/lossless) bit-identical, applied and ignored")


def edge_case_files(root):
    """Typed, duplicated, truncated and malformed EXIF in each place Pillow 9.4 reads it."""
    le, be = True, False
    off = 8 + 2 + 12 + 4  # where a one-entry IFD's out-of-line data starts
    blocks = {
        "long6": tiff([(0x112, 4, 1, struct.pack("<L", 6))]),
        "byte6": tiff([(0x112, 1, 1, b"\x06\0\0\0")]),
        "sbyte6": tiff([(0x112, 6, 1, b"\x06\0\0\0")]),
        "ascii6": tiff([(0x112, 2, 2, b"6\0\0\0")]),
        "undefined6": tiff([(0x112, 7, 1, b"\x06\0\0\0")]),
        "float6": tiff([(0x112, 11, 1, struct.pack("<f", 6.0))]),
        "double8": tiff([(0x112, 12, 1, struct.pack("<L", off))], extra=struct.pack("<d", 8.0)),
        "rational12_2": tiff([(0x112, 5, 1, struct.pack("<L", off))], extra=struct.pack("<LL", 12, 2)),
        "rational6_0": tiff([(0x112, 5, 1, struct.pack("<L", off))], extra=struct.pack("<LL", 6, 0)),
        "srational": tiff([(0x112, 10, 1, struct.pack("<L", off))], extra=struct.pack("<ll", -16, -2)),
        "count2": tiff([(0x112, 3, 2, struct.pack("<HH", 6, 1))]),
        "count0": tiff([(0x112, 3, 0, short(6))]),
        "type99": tiff([(0x112, 99, 1, short(6))]),
        "dup6_3": tiff([(0x112, 3, 1, short(6)), (0x112, 3, 1, short(3))]),
        "value0": tiff([(0x112, 3, 1, short(0))]),
        "value9": tiff([(0x112, 3, 1, short(9))]),
        "mm8": tiff([(0x112, 3, 1, short(8, be))], little=be),
        "trunc_before": tiff([(0x10F, 2, 100, struct.pack("<L", 5000)), (0x112, 3, 1, short(6))]),
        "trunc_after": tiff([(0x112, 3, 1, short(6)), (0x10F, 2, 100, struct.pack("<L", 5000))]),
        "ifd_past_end": b"II*\0" + struct.pack("<L", 999) + b"\0" * 8,
        "not_tiff": b"XX*\0\x08\0\0\0",
        "short_header": b"II*\0\x08\0",
        "bigtiff": b"II+\0\x08\0\0\0\x10\0\0\0\0\0\0\0",
        "mm_plus": b"MM\0+" + tiff([(0x112, 3, 1, short(5, be))], little=be)[4:],
        "ii_0star": b"II\0*" + tiff([(0x112, 3, 1, short(7))])[4:],
        "resunit_ascii": tiff([(0x112, 3, 1, short(6)), (0x128, 2, 2, b"2\0\0\0")]),
    }
    files = []

    def add(name, data):
        p = root / name
        p.write_bytes(data)
        files.append(p)

    for name, block in blocks.items():
        add(f"jpeg_{name}.jpg", jpeg_with([(0xE1, b"Exif\0\0" + block)]))
        add(f"jpeg_dpi_{name}.jpg", jpeg_with([(0xE1, b"Exif\0\0" + block)], dpi=True))
        add(f"png_{name}.png", png_with(pre=[chunk(b"eXIf", block)]))
        add(f"webp_{name}.webp", save(photo(23, 17, 3), "WEBP", lossless=True, exif=block))
    t6 = tiff([(0x112, 3, 1, short(6))])
    t3 = tiff([(0x112, 3, 1, short(3))])
    xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="8"/></x:xmpmeta>'
    raw = b"\nexif\n      30\n" + t6.hex().encode() + b"\n"
    add("jpeg_two_app1.jpg", jpeg_with([(0xE1, b"Exif\0\0" + t3), (0xE1, b"Exif\0\0" + t6)]))
    add("jpeg_exif0X.jpg", jpeg_with([(0xE1, b"Exif\0X" + t6)], dpi=True))
    add("jpeg_xmp_only.jpg", jpeg_with([(0xE1, b"http://ns.adobe.com/xap/1.0/\0" + xmp)]))
    add("png_pre3_post6.png", png_with(pre=[chunk(b"eXIf", t3)], post=[chunk(b"eXIf", t6)]))
    add("png_text_exif.png", png_with(pre=[chunk(b"tEXt", b"exif\0" + t6)]))
    add("png_ztxt_exif.png", png_with(pre=[chunk(b"zTXt", b"exif\0\0" + zlib.compress(t6))]))
    add("png_exif_prefixed.png", png_with(pre=[chunk(b"eXIf", b"Exif\0\0" + t6)]))
    add("png_raw_profile.png", png_with(pre=[chunk(b"tEXt", b"Raw profile type exif\0" + raw)]))
    add("png_raw_profile_z_post.png", png_with(post=[chunk(
        b"zTXt", b"Raw profile type exif\0\0" + zlib.compress(raw.replace(b"\n4", b" 4")))]))
    add("png_raw_profile_bad.png", png_with(pre=[chunk(b"tEXt", b"Raw profile type exif\0" + raw + b"0")]))
    add("png_xmp.png", png_with(pre=[chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp)]))
    add("png_xmp_post.png", png_with(post=[chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp)]))
    add("png_xmp_zipped.png", png_with(pre=[chunk(b"iTXt", b"XML:com.adobe.xmp\0\1\0\0\0" + zlib.compress(xmp))]))
    add("png_xmp_bad_utf8.png", png_with(pre=[chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0\xff" + xmp)]))
    add("png_xmp_and_exif1.png", png_with(pre=[chunk(b"eXIf", tiff([(0x112, 3, 1, short(1))])),
                                              chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp)]))
    add("png_xmp_and_exif_no_tag.png", png_with(pre=[chunk(b"eXIf", tiff([(0x10F, 2, 2, b"x\0\0\0")])),
                                                    chunk(b"tEXt", b"XML:com.adobe.xmp\0" + xmp)]))
    return files


def test_edge_cases_match_pillow(stoker_bin, tmp_path):
    files = edge_case_files(tmp_path)
    counts, _ = run_and_compare(stoker_bin, tmp_path, "qwen2.5-vl", files)
    REPORT.append(f"exif edge cases: {len(files)} files, Pillow outcomes {counts}, stoker agrees")
    assert counts.get("raises", 0) >= 10 and counts.get("ok", 0) >= 60


def mutants(root, n, seed=11):
    """EXIF blocks (orientation 6 among Make, XResolution, ExifIFD, ...) with random bytes
    overwritten or the block cut short, in a JPEG (with and without a JFIF dpi) and a PNG."""
    ex = Image.Exif()
    ex[0x0112] = 6
    ex[0x010F] = "stoker"
    ex[0x011A] = 72.0
    ex[0x0128] = 2
    ex[0x0131] = "test"
    block = ex.tobytes()[6:]
    rng = random.Random(seed)
    files = []
    for k in range(n):
        b = bytearray(block)
        if k % 5 == 4:
            b = b[:rng.randrange(len(b))]
        else:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.choice([0, 1, 2, 3, 5, 6, 8, 9, 0xFF, rng.randrange(256)])
        b = bytes(b)
        kind = k % 3
        data = (jpeg_with([(0xE1, b"Exif\0\0" + b)], dpi=kind == 1) if kind < 2
                else png_with(pre=[chunk(b"eXIf", b)]))
        p = root / f"mutant_{k:03d}.{'png' if kind == 2 else 'jpg'}"
        p.write_bytes(data)
        files.append(p)
    return files


def test_mutated_exif_blocks_match_pillow(stoker_bin, tmp_path):
    files = mutants(tmp_path, 240)
    counts, _ = run_and_compare(stoker_bin, tmp_path, "qwen2.5-vl", files)
    REPORT.append(f"exif mutants: {len(files)} files, Pillow outcomes {counts}, stoker agrees")
    assert counts.get("ok", 0) > 50 and counts.get("raises", 0) > 5


# (width, height): below the factor, exactly at it, 1x1, 1xN/Nx1 and strips at aspect 200 (kept)
# and just above (refused).
SMALL_SIZES = [(13, 9), (9, 13), (28, 28), (27, 27), (31, 31), (32, 32), (31, 500), (500, 31),
               (1, 1), (1, 200), (200, 1), (2, 401), (5, 1000), (1000, 5), (7, 1400), (7, 1401),
               (13, 2600), (16, 3200), (3, 3), (14, 14), (40, 20)]


def small_files(root):
    files = []
    for i, (w, h) in enumerate(SMALL_SIZES):
        img = photo(w, h, 40 + i)
        p = root / f"small_{w}x{h}.png"
        img.save(p)
        files.append(p)
        if i % 3 == 0:  # JPEG too: the streaming row decoder on tiny images
            q = root / f"small_{w}x{h}.jpg"
            img.save(q, quality=90)
            files.append(q)
    return files


@pytest.mark.parametrize("model", MODELS)
def test_small_images_match_transformers_453(stoker_bin, tmp_path, model):
    files = small_files(tmp_path)
    counts, records = run_and_compare(stoker_bin, tmp_path, model, files)
    refused = sorted({f.stem for f, r in zip(files, records) if not r["ok"]})
    assert refused == ["small_2x401", "small_7x1401"], refused  # aspect > 200 only
    legacy, _ = run_and_compare(stoker_bin, tmp_path, model, files, rules="legacy")
    assert legacy.get("refused", 0) > counts.get("refused", 0)
    REPORT.append(f"small images {model}: {len(files)} files, {counts.get('ok', 0)} bit-identical, "
                  f"{counts.get('refused', 0)} refused (aspect); legacy rules: {legacy}")


def test_spec_worked_grids(stoker_bin, tmp_path):
    """spec §1.1 step 2 (verified there against transformers' slow processor): H 9 x W 13 →
    [1,4,6] (Qwen2/2.5-VL), [1,14,20] (Qwen3-VL); Qwen3-VL 28x28 → [1,16,16]."""
    a, b = tmp_path / "w13_h9.png", tmp_path / "w28_h28.png"
    photo(13, 9).save(a)
    photo(28, 28).save(b)
    for model, grid_a, grid_b in [("qwen2-vl", [1, 4, 6], [1, 4, 4]),
                                  ("qwen2.5-vl", [1, 4, 6], [1, 4, 4]),
                                  ("qwen3-vl", [1, 14, 20], [1, 16, 16])]:
        res = stoker_cli.preprocess(stoker_bin, model, [a, b])
        assert res.returncode == 0, res.stderr
        assert [r["grid"] for r in res.records] == [grid_a, grid_b], model
