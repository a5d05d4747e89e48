"""Shapes and patch order against transformers.js (npm @huggingface/transformers@4.3.2), an
implementation nobody on the team wrote, driven through tests/js/qwen_image_shapes.mjs offline.

transformers.js is NOT a pixel oracle (it resizes without antialiasing) and its smart_resize
rounds half-up and pre-enlarges small sides, so:
  * shapes (image_grid_thw, pixel_values rows × cols) are compared only on sizes where its
    rounding rule and Python's give the same target size (both rules computed here);
  * patch ORDER is compared on images whose smart_resize size is their own size, so no
    resampling happens in either implementation: then the full pixel_values must agree
    (|Δ| ≤ 1e-5; transformers.js rescales in float32).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import random
import shutil
import subprocess
import zlib

import numpy as np
import pytest
from PIL import Image

import hf_image_reference as ref
import stoker_cli

REPO = pathlib.Path(__file__).resolve().parents[2]
JS_SCRIPT = REPO / "tests" / "js" / "qwen_image_shapes.mjs"
TRANSFORMERS_JS = REPO / "tools" / "oracles" / "node_modules" / "@huggingface" / "transformers"
MODELS = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]


def js_round(x: float) -> int:
    return math.floor(x + 0.5)  # JavaScript Math.round: half toward +∞


def js_smart_resize(height, width, factor, min_pixels, max_pixels):
    """transformers.js 4.3.2 smart_resize (read from its source): returns (h', w')."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = js_round(height * scale), js_round(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect")
    h_bar = js_round(height / factor) * factor
    w_bar = js_round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def shape_sizes(spec: ref.ModelSpec, n: int, seed: int):
    """n (w, h) sizes where Python's and transformers.js's rules agree, plus the count skipped."""
    rng = random.Random(seed)
    sizes, skipped = [], 0
    f = spec.factor
    fixed = [(1024, 768), (768, 1024), (1920, 1080), (333, 1500), (1500, 101), (130, 97),
             (4 * f + 3, 3 * f - 5), (f, f), (40 * f, f + 1)]
    while len(sizes) < n:
        if fixed:
            w, h = fixed.pop(0)
        else:
            w = rng.randint(f, 900)
            h = max(f, min(900, int(w / math.exp(rng.uniform(-2.5, 2.5)))))
        try:
            py = ref.smart_resize(h, w, f, spec.min_pixels, spec.max_pixels)
        except ValueError:
            continue
        if js_smart_resize(h, w, f, spec.min_pixels, spec.max_pixels) != py:
            skipped += 1
            continue
        sizes.append((w, h))
    return sizes, skipped


@pytest.fixture(scope="module")
def node_env(tmp_path_factory):
    node = shutil.which("node")
    if not node:
        pytest.fail("node not found (scripts/setup.sh installs it)")
    if not TRANSFORMERS_JS.is_dir():
        pytest.fail(f"{TRANSFORMERS_JS} missing: run scripts/setup.sh (npm oracles)")
    models = tmp_path_factory.mktemp("js_models")
    for name in MODELS:
        (models / name).mkdir()
        cfg = ref.MODELS[name].preprocessor_config()
        (models / name / "preprocessor_config.json").write_text(json.dumps(cfg, indent=1))
    return node, models


def run_js(node, models, cases, work):
    job = work / "job.json"
    job.write_text(json.dumps({"models_dir": str(models), "cases": cases}))
    proc = subprocess.run([node, str(JS_SCRIPT), str(job)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    out = [json.loads(l) for l in proc.stdout.decode().splitlines() if l.startswith("{")]
    assert len(out) == len(cases), proc.stdout.decode()[-3000:]
    errors = [o for o in out if "error" in o]
    assert not errors, errors[:5]
    return out


def noise_png(path, w, h, seed, noise=True):
    if noise:
        rgb = np.random.RandomState(seed).randint(0, 256, (h, w, 3), dtype=np.uint8)
    else:  # shapes only: a cheap pattern that compresses well
        y, x = np.indices((h, w))
        rgb = np.stack([(x + seed) & 255, y & 255, (x ^ y) & 255], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(path, compress_level=1)
    raw = path.with_suffix(".rgb")
    rgb.tofile(raw)
    return raw


@pytest.mark.parametrize("model", MODELS)
def test_shapes_match_transformers_js(stoker_bin, node_env, tmp_path, model):
    node, models = node_env
    spec = ref.MODELS[model]
    sizes, skipped = shape_sizes(spec, 14, seed=zlib.crc32(model.encode()))
    pngs, cases = [], []
    for i, (w, h) in enumerate(sizes):
        png = tmp_path / f"{i}_{w}x{h}.png"
        raw = noise_png(png, w, h, seed=i, noise=False)
        pngs.append(png)
        cases.append({"model": model, "raw": str(raw), "width": w, "height": h})
    js = run_js(node, models, cases, tmp_path)
    res = stoker_cli.preprocess(stoker_bin, model, pngs)
    assert res.returncode == 0, res.stderr[-3000:]
    for (w, h), j, s in zip(sizes, js, res.records):
        assert s["ok"], s
        assert s["grid"] == j["grid"], f"{model} {w}x{h}: grid stoker {s['grid']} js {j['grid']}"
        assert (s["rows"], s["cols"]) == (j["rows"], j["cols"]), f"{model} {w}x{h}"
        assert [s["resized_height"], s["resized_width"]] == j["resized"], f"{model} {w}x{h}"
        t, gh, gw = j["grid"]
        assert s["tokens"] == t * gh * gw // 4
    print(f"{model}: {len(sizes)} sizes agree with transformers.js "
          f"({skipped} sampled sizes skipped where its rounding differs)")


@pytest.mark.parametrize("model,blocks", [("qwen2-vl", (5, 3)), ("qwen2.5-vl", (3, 7)),
                                          ("qwen3-vl", (9, 8)), ("qwen3-vl", (8, 11))])
def test_patch_order_matches_transformers_js(stoker_bin, node_env, tmp_path, model, blocks):
    """No resampling (the image is already a smart_resize fixed point): the whole pixel_values
    matrix must agree, which pins the patch permutation independently of the resampler."""
    node, models = node_env
    spec = ref.MODELS[model]
    w, h = blocks[0] * spec.factor, blocks[1] * spec.factor
    assert ref.smart_resize(h, w, spec.factor, spec.min_pixels, spec.max_pixels) == (h, w)
    png = tmp_path / f"order_{w}x{h}.png"
    raw = noise_png(png, w, h, seed=w * 7 + h)
    js_out = tmp_path / "js.f32"
    js = run_js(node, models, [{"model": model, "raw": str(raw), "width": w, "height": h,
                                "out": str(js_out)}], tmp_path)[0]
    dump = tmp_path / "dump"
    dump.mkdir()
    res = stoker_cli.preprocess(stoker_bin, model, [png], dump_dir=dump)
    assert res.returncode == 0 and res.records[0]["ok"], res
    pv = np.load(dump / "0.pixel_values.npy")
    js_pv = np.fromfile(js_out, dtype=np.float32).reshape(js["rows"], js["cols"])
    assert pv.shape == js_pv.shape
    diff = np.abs(pv - js_pv)
    assert diff.max() <= 1e-5, f"max |Δ| {diff.max()} first at {np.argwhere(diff > 1e-5)[0]}"
