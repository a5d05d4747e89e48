"""Pixel parity: `stoker preprocess` against the numpy/Pillow reimplementation of the HF slow
Qwen-VL image processor (hf_image_reference.py), on a `stoker synth` dataset covering every
format and colour mode.

Asserted per image and model: (a) the resized uint8 image equals Pillow's byte for byte;
(b) pixel_values within 1e-6 of the float32 reference (bf16: equal to the reference rounded to
nearest-even); (c) sizes, grid, rows, columns and token counts equal. Images the reference
rejects (smart_resize's size / aspect rules) must be rejected by stoker too.
"""

from __future__ import annotations

import json
import os
import pathlib
import struct
import subprocess
import tempfile

import numpy as np
import pytest
from PIL import Image, ImageCms, PngImagePlugin

import hf_image_reference as ref
import stoker_cli

# ≥ 200 images across all formats; the synth size cap keeps 4K-class images from dominating
# the runtime (each resized pixel costs 24 bytes of float32 pixel_values per model).
N_RECORDS = int(os.environ.get("STOKER_PARITY_N", "150"))
# The full run must cover ≥ 200 images and every kind; the sanitizer tree runs a small set
# (STOKER_PARITY_MIN_IMAGES lowered) only to put every decoder and the resampler under ASan.
MIN_IMAGES = int(os.environ.get("STOKER_PARITY_MIN_IMAGES", "200"))
SEED = 20261130
CHUNK = 24  # files per `stoker preprocess` call; dumps are checked and deleted per chunk

# Every coding/mode the synthetic set must cover (classify() keys, prefix match).
REQUIRED_KINDS = [
    "jpeg/baseline/4:2:0/RGB", "jpeg/baseline/4:4:4/RGB", "jpeg/progressive/", "jpeg/baseline/-/L",
    "jpeg/baseline/-/CMYK", "png/RGB", "png/RGBA", "png/L", "png/LA", "png/P",
    "webp/lossy/RGB", "webp/lossless/", "webp/lossy+alpha/RGBA",
]

REPORT: list[str] = []


def pytest_terminal_summary_lines():
    return REPORT


@pytest.fixture(scope="module")
def dataset(stoker_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    stoker_cli.synth(stoker_bin, out, ["--n", str(N_RECORDS), "--seed", str(SEED)]
                     + SYNTH_EXTRA_ARGS)
    files = stoker_cli.image_files(out / "images")
    kinds = {str(f): stoker_cli.classify(f) for f in files}
    counts = stoker_cli.count_by(kinds.values())
    REPORT.append(f"synthetic set: {len(files)} images from {N_RECORDS} records; by kind:")
    REPORT.extend(f"  {k:32s} {v:4d}" for k, v in counts.items())
    return out, files, kinds


# Cap the image side: keeps the ~24 bytes of float32 pixel_values per resized pixel (per model)
# and numpy's time in check; large downscales are still covered (sources up to the cap, images
# from tiny to the cap, aspect ratios up to 50:1).
SYNTH_EXTRA_ARGS = ["--max-side", os.environ.get("STOKER_PARITY_MAX_SIDE", "768")]


def test_dataset_covers_every_format(dataset):
    _, files, kinds = dataset
    assert len(files) >= MIN_IMAGES, f"only {len(files)} images"
    if MIN_IMAGES < 200:
        pytest.skip("small set (sanitizer run): kind coverage is checked by the full run")
    missing = [k for k in REQUIRED_KINDS if not any(v.startswith(k) for v in kinds.values())]
    assert not missing, f"synthetic set lacks {missing}; has {sorted(set(kinds.values()))}"


def _record_images(record: dict):
    """(path, width, height) for each image part of a data.jsonl record, whatever nesting."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            path = node.get("image") or node.get("path") or node.get("file")
            if isinstance(path, str) and pathlib.Path(path).suffix.lower() in \
                    stoker_cli.IMAGE_SUFFIXES:
                found.append((path, node.get("width"), node.get("height")))
            for v in node.values():
                if isinstance(v, (dict, list)):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(record)
    return found


def test_pillow_opens_every_file_with_the_recorded_size(dataset):
    """Independent check of stoker's encoders: Pillow decodes every file fully, and its size is
    the one the JSONL record states."""
    root, files, _ = dataset
    lines = (root / "data.jsonl").read_text().splitlines()
    assert len(lines) == N_RECORDS
    referenced = 0
    sized = 0
    for line in lines:
        record = json.loads(line)
        for path, width, height in _record_images(record):
            p = pathlib.Path(path)
            if not p.is_absolute():
                p = root / p
            assert p.is_file(), f"record references missing {p}"
            with Image.open(p) as img:
                img.load()
                if width is not None and height is not None:
                    assert img.size == (width, height), f"{p}: Pillow {img.size}, record " \
                                                        f"{(width, height)}"
                    sized += 1
            referenced += 1
    assert referenced > 0, "no image paths found in data.jsonl"
    REPORT.append(f"data.jsonl: {referenced} image references open in Pillow; "
                  f"{sized} carry a size that matches")
    # images.jsonl (synth's per-image metadata): Pillow's size and mode must match it.
    meta_lines = (root / "images.jsonl").read_text().splitlines()
    for line in meta_lines:
        meta = json.loads(line)
        p = root / meta["path"]
        with Image.open(p) as img:
            img.load()
            assert img.size == (meta["width"], meta["height"]), f"{p}: Pillow {img.size}, {meta}"
            assert img.mode == meta["mode"], f"{p}: Pillow mode {img.mode}, {meta}"
    REPORT.append(f"images.jsonl: {len(meta_lines)} images, Pillow size and mode match each")
    for f in files:  # every file in images/, referenced or not, decodes in Pillow
        with Image.open(f) as img:
            img.load()


def _chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def _run_chunks(stoker_bin, model, files, dtype):
    """Yields (chunk, records, dump_dir) with the next chunk's stoker run overlapping the
    caller's checks of the current one (2 cores: stoker on one, numpy on the other)."""
    chunks = list(_chunks(files, CHUNK))
    if not chunks:
        return

    def start(chunk):
        d = tempfile.mkdtemp(prefix="stoker-parity-")
        cmd = [stoker_bin, "preprocess", "--model", model, "--dtype", dtype, "--dump-dir", d]
        cmd += [str(f) for f in chunk]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return proc, d

    pending = start(chunks[0])
    for i, chunk in enumerate(chunks):
        proc, d = pending
        out, err = proc.communicate(timeout=600)
        assert proc.returncode >= 0, f"stoker preprocess killed by signal {-proc.returncode}"
        if i + 1 < len(chunks):
            pending = start(chunks[i + 1])
        records = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
        assert len(records) == len(chunk), f"{len(records)} records for {len(chunk)} files:\n" \
                                           f"{err.decode(errors='replace')[-2000:]}"
        try:
            yield chunk, records, pathlib.Path(d)
        finally:
            for p in pathlib.Path(d).iterdir():
                p.unlink()
            os.rmdir(d)


@pytest.mark.parametrize("model,dtype", [("qwen2-vl", "f32"), ("qwen2.5-vl", "f32"),
                                         ("qwen3-vl", "f32"), ("qwen3-vl", "bf16")])
def test_pixel_parity(stoker_bin, dataset, model, dtype):
    _, files, kinds = dataset
    if model == "qwen2-vl" or dtype == "bf16":
        # Every image through qwen2.5-vl and qwen3-vl f32; a quarter of them (every kind still
        # present, millions of values) through qwen2-vl — whose image processor config is
        # qwen2.5-vl's (patch 14, merge 2, pixel bounds, CLIP mean/std: hf_image_reference.MODELS),
        # so this checks the preset's wiring — and through bf16, the rounding of the same
        # values. CI time: the full set is ~40 s of CPU per pass.
        files = files[::4]
        _compare_and_report(stoker_bin, model, dtype, files, kinds, "parity",
                            min_images=0.9 * MIN_IMAGES / 4)
        return
    _compare_and_report(stoker_bin, model, dtype, files, kinds, "parity")


def _compare_and_report(stoker_bin, model, dtype, files, kinds, title, min_images=None):
    spec = ref.MODELS[model]
    checked: dict[str, int] = {}
    rejected: dict[str, int] = {}
    max_abs = 0.0
    inexact_rows = 0
    failures = []
    for chunk, records, dump in _run_chunks(stoker_bin, model, files, dtype):
        for index, (path, rec) in enumerate(zip(chunk, records)):
            kind = kinds[str(path)]
            where = f"{path.name} [{kind}] {model}/{dtype}"
            rgb = ref.load_rgb(path)
            try:
                r = ref.process_rgb(rgb, spec)
            except ValueError as e:
                # The reference rejects it (smart_resize rule): stoker must reject it too.
                if rec.get("ok"):
                    failures.append(f"{where}: reference rejects ({e}) but stoker accepted")
                elif path.name not in rec.get("error", "") and str(path) not in rec.get("file", ""):
                    failures.append(f"{where}: error does not name the file: {rec}")
                rejected[kind] = rejected.get(kind, 0) + 1
                continue
            if not rec.get("ok"):
                failures.append(f"{where}: stoker failed: {rec}")
                continue
            # (c) sizes, grid, rows, columns, tokens.
            expect = {"width": r.width, "height": r.height, "resized_width": r.resized_width,
                      "resized_height": r.resized_height, "grid": list(r.grid), "rows": r.rows,
                      "cols": spec.columns, "tokens": r.tokens(spec.merge_size)}
            got = {k: rec.get(k) for k in expect}
            if got != expect:
                failures.append(f"{where}: metadata {got} != reference {expect}")
                continue
            # (a) resized uint8, byte for byte.
            resized = np.load(dump / f"{index}.resized.npy")
            if resized.shape != r.resized.shape or resized.dtype != np.uint8:
                failures.append(f"{where}: resized {resized.dtype}{resized.shape} != "
                                f"uint8{r.resized.shape}")
                continue
            if not np.array_equal(resized, r.resized):
                diff = np.abs(resized.astype(int) - r.resized.astype(int))
                failures.append(f"{where}: resized differs from Pillow at {(diff > 0).sum()} "
                                f"values (max {diff.max()}) first at "
                                f"{np.argwhere(diff > 0)[0].tolist()}")
                continue
            # (b) pixel_values.
            pv = np.load(dump / f"{index}.pixel_values.npy")
            if dtype == "f32":
                if pv.dtype != np.float32 or pv.shape != r.pixel_values.shape:
                    failures.append(f"{where}: pixel_values {pv.dtype}{pv.shape}")
                    continue
                d = float(np.abs(pv - r.pixel_values).max())
                max_abs = max(max_abs, d)
                if d > 1e-6:
                    bad = np.argwhere(np.abs(pv - r.pixel_values) > 1e-6)[0].tolist()
                    failures.append(f"{where}: pixel_values max |Δ| {d:.3g} first at {bad}")
                    continue
                inexact_rows += int((pv != r.pixel_values).any(axis=1).sum())
            else:
                expect_bits = ref.to_bf16_bits(r.pixel_values)
                if pv.dtype != np.uint16 or pv.shape != expect_bits.shape:
                    failures.append(f"{where}: bf16 pixel_values {pv.dtype}{pv.shape}")
                    continue
                if not np.array_equal(pv, expect_bits):
                    n = int((pv != expect_bits).sum())
                    bad = np.argwhere(pv != expect_bits)[0].tolist()
                    failures.append(f"{where}: {n} bf16 values differ from RNE(reference), "
                                    f"first at {bad}")
                    continue
            checked[kind] = checked.get(kind, 0) + 1
    total = sum(checked.values())
    REPORT.append(f"{title} {model}/{dtype}: {total} images exact, {sum(rejected.values())} "
                  f"rejected by both (smart_resize rules), {len(failures)} failures; "
                  + (f"max |Δ| {max_abs:.3g}, rows not bit-identical {inexact_rows}"
                     if dtype == "f32" else "bf16 bit-exact"))
    REPORT.extend(f"  {k:32s} {checked.get(k, 0):4d} ok"
                  + (f", {rejected[k]} rejected" if k in rejected else "")
                  for k in sorted(set(checked) | set(rejected)))
    assert not failures, f"{len(failures)} parity failures:\n" + "\n".join(failures[:25])
    if min_images is None:
        min_images = 0.9 * MIN_IMAGES
    assert total >= min_images, f"only {total} images compared"


# (width, height) sizes that exercise each smart_resize rule: half-way ties (Python rounds half
# to even), the min_pixels branch, the max_pixels branch, aspect ratio exactly 200 (allowed).
RULE_SIZES = {
    "qwen2-vl": [(630, 98), (14 * 45, 14 * 31), (60, 40), (5600, 28), (4000, 3400)],
    "qwen2.5-vl": [(28 * 22 + 14, 28 * 5 + 14), (100, 30), (28, 5600), (3700, 3600)],
    "qwen3-vl": [(720, 720), (32 * 9 + 16, 32 * 13 + 16), (300, 200), (6400, 32), (4200, 4100)],
}


@pytest.mark.parametrize("model", sorted(RULE_SIZES))
def test_smart_resize_rules_metadata(stoker_bin, tmp_path, model):
    """Sizes, grids and tokens for the edge cases of smart_resize (no pixel dumps: the large
    ones would be hundreds of MB). Flat images keep encoding cheap."""
    spec = ref.MODELS[model]
    files, expect = [], []
    for i, (w, h) in enumerate(RULE_SIZES[model]):
        p = tmp_path / f"rule_{w}x{h}.png"
        Image.new("RGB", (w, h), (30 * i % 256, 90, 200)).save(p, compress_level=1)
        files.append(p)
        rh, rw = ref.smart_resize(h, w, spec.factor, spec.min_pixels, spec.max_pixels)
        grid = [1, rh // spec.patch_size, rw // spec.patch_size]
        expect.append({"ok": True, "width": w, "height": h, "resized_width": rw,
                       "resized_height": rh, "grid": grid, "rows": grid[1] * grid[2],
                       "cols": spec.columns, "tokens": grid[1] * grid[2] // 4})
    res = stoker_cli.preprocess(stoker_bin, model, files)
    assert res.returncode == 0, res.stderr[-3000:]
    for f, e, rec in zip(files, expect, res.records):
        got = {k: rec.get(k) for k in e}
        assert got == e, f"{f.name} {model}: stoker {got} != reference {e}"


def _pillow_encoded_set(root: pathlib.Path):
    """Files written by Pillow's encoders (not stoker's): codings synth may not produce (4:2:2,
    interlaced PNG, tRNS palettes, 16-bit gray, optimised/progressive JPEG) at awkward sizes —
    exactly the patch factor, 8× upscales, 200:1 strips, odd sizes."""
    rs = np.random.RandomState(99)

    def photo(w, h):  # smooth + noisy, so resampling and chroma subsampling both matter
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(1, w - 1)), (y * 255 // max(1, h - 1)),
                         ((x + y) * 3) & 255], axis=-1)
        return np.clip(base + rs.randint(-40, 40, (h, w, 3)), 0, 255).astype(np.uint8)

    sizes = [(28, 28), (32, 32), (29, 31), (57, 33), (97, 61), (640, 480), (1000, 29),
             (33, 1600), (5600, 28), (6400, 32), (333, 517), (1023, 767)]
    specs = [
        ("jpeg-420", "jpg", dict(format="JPEG", quality=85)),
        ("jpeg-422", "jpg", dict(format="JPEG", quality=90, subsampling=1)),
        ("jpeg-444-optimized", "jpg", dict(format="JPEG", quality=95, subsampling=0, optimize=True)),
        ("jpeg-progressive", "jpg", dict(format="JPEG", quality=80, progressive=True)),
        ("jpeg-gray", "jpg", dict(format="JPEG", quality=90, mode="L")),
        ("jpeg-cmyk", "jpg", dict(format="JPEG", quality=90, mode="CMYK")),
        ("png-rgb-interlaced", "png", dict(format="PNG", interlace=1)),
        ("png-rgba", "png", dict(format="PNG", mode="RGBA")),
        ("png-la", "png", dict(format="PNG", mode="LA")),
        ("png-p-trns", "png", dict(format="PNG", mode="P", transparency=0)),
        ("png-1bit", "png", dict(format="PNG", mode="1")),
        ("png-gray16", "png", dict(format="PNG", mode="I;16")),
        ("png-gamma-srgb", "png", dict(format="PNG", pnginfo="gamma")),
        ("jpeg-icc", "jpg", dict(format="JPEG", quality=90, icc_profile="srgb")),
        ("webp-lossy", "webp", dict(format="WEBP", quality=80)),
        ("webp-lossless-rgba", "webp", dict(format="WEBP", lossless=True, mode="RGBA")),
    ]
    files, kinds = [], {}
    for i, (name, ext, opts) in enumerate(specs * 2):
        w, h = sizes[i % len(sizes)]
        opts = dict(opts)
        mode = opts.pop("mode", "RGB")
        img = Image.fromarray(photo(w, h))
        if mode == "RGBA":
            img.putalpha(Image.fromarray(rs.randint(0, 256, (h, w), dtype=np.uint8)))
        elif mode == "LA":
            img = img.convert("L")
            img.putalpha(Image.fromarray(rs.randint(0, 256, (h, w), dtype=np.uint8)))
        elif mode == "P":
            img = img.quantize(colors=64)
        elif mode == "I;16":
            img = Image.fromarray((photo(w, h)[..., 0].astype(np.uint16) * 257 // 3))
        elif mode != "RGB":
            img = img.convert(mode)
        if opts.get("pnginfo") == "gamma":  # colour chunks Pillow ignores: so must stoker
            info = PngImagePlugin.PngInfo()
            info.add(b"gAMA", struct.pack(">I", 45455))
            info.add(b"sRGB", b"\x00")
            opts["pnginfo"] = info
        if opts.get("icc_profile") == "srgb":
            opts["icc_profile"] = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
        path = root / f"pil_{i:02d}_{name}_{w}x{h}.{ext}"
        img.save(path, **opts)
        files.append(path)
        kinds[str(path)] = f"pillow/{name}"
    return files, kinds


@pytest.mark.parametrize("model", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
def test_pillow_encoded_parity(stoker_bin, tmp_path, model):
    files, kinds = _pillow_encoded_set(tmp_path)
    _compare_and_report(stoker_bin, model, "f32", files, kinds, "pillow-encoded", min_images=10)
