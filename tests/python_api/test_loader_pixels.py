"""The production path is the exact path: every batch the Loader delivers carries, for each of
its samples' images, pixel_values rows and image_grid_thw bit-identical to the independent
numpy + Pillow reference of the HF slow processor (bench/hf_image_reference.py, never
derived from stoker's C++) — the same check `stoker preprocess` passes, now on what
`stoker run`, `stoker serve` and the Python Loader run (images decoded straight into the batch).
Also with a JPEG rotated by EXIF (orientation 6), which takes the whole-image path."""
import json
import os
import re
import sys

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import hf_image_reference as ref  # noqa: E402


def image_refs(record):
    """The record's image references in order (OpenAI messages, as stoker synth writes them)."""
    out = []
    for m in record["messages"]:
        content = m["content"]
        if isinstance(content, str):
            continue
        for part in content:
            if part.get("type") == "image":
                out.append(part.get("image") or part.get("url") or part.get("path"))
    return out


@pytest.mark.parametrize("model", ["qwen2.5-vl", "qwen3-vl"])
def test_loader_pixels_equal_the_reference(stoker, dataset, tmp_path, model):
    # One image turned into a JPEG with EXIF orientation 6 (rotate 90°): a whole-image decode.
    root = os.path.dirname(dataset)
    lines = open(dataset).read().splitlines()
    records = [json.loads(x) for x in lines]
    first_img = next((r, p) for r in records for p in image_refs(r))[1]
    rotated = os.path.join(root, "images", "rotated_exif6.jpg")
    if not os.path.exists(rotated):
        img = Image.open(os.path.join(root, first_img)).convert("RGB").resize((150, 90))
        exif = Image.Exif()
        exif[0x0112] = 6
        img.save(rotated, "JPEG", quality=90, exif=exif)
    text = open(dataset).read().replace(f'"{first_img}"', '"images/rotated_exif6.jpg"', 1)
    # Keep the manifest beside the images (its folder is the trust boundary).
    manifest = os.path.join(root, f"pixels_{model}.jsonl")
    open(manifest, "w").write(text)
    by_id = {i: json.loads(x) for i, x in enumerate(text.splitlines())}
    spec = ref.MODELS[model]
    loader = stoker.Loader(manifest, model=model, batch_size=4, threads=2)
    checked = 0
    for batch in loader:
        ids = batch["sample_ids"].tolist()
        grids = batch["image_grid_thw"].tolist()
        pixels = batch["pixel_values"].numpy()
        assert pixels.dtype == np.float32
        row, g = 0, 0
        for sid in ids:
            for path in image_refs(by_id[sid]):
                want = ref.process_file(os.path.join(root, path), spec)
                assert grids[g] == list(want.grid), (sid, path)
                got = pixels[row:row + want.rows]
                assert got.shape == want.pixel_values.shape, (sid, path)
                assert np.array_equal(got.view(np.uint32), want.pixel_values.view(np.uint32)), \
                    (sid, path, float(np.abs(got - want.pixel_values).max()))
                row += want.rows
                g += 1
                checked += 1
        assert row == pixels.shape[0] and g == len(grids)
    assert checked >= 20
    os.remove(manifest)


def test_loader_image_options(stoker, dataset, tmp_path):
    """exif="ignore" gives an EXIF-rotated JPEG as stored (as qwen-vl-utils and LLaMA-Factory open
    images), the default rotates it (transformers' load_image); small_images="refuse" fails a
    20×20 image's sample with InvalidArgument (transformers ≤ 4.52), the default enlarges it."""
    root = os.path.dirname(dataset)
    records = [json.loads(x) for x in open(dataset).read().splitlines()]
    singles = [r for r in records if len(image_refs(r)) == 1][:2]
    assert len(singles) == 2
    rotated = os.path.join(root, "images", "options_exif6.jpg")
    tiny = os.path.join(root, "images", "options_tiny.png")
    img = Image.open(os.path.join(root, image_refs(singles[0])[0])).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6
    img.resize((150, 90)).save(rotated, "JPEG", quality=90, exif=exif)
    img.resize((20, 20)).save(tiny, "PNG")
    lines = []
    for r, new in zip(singles, ["images/options_exif6.jpg", "images/options_tiny.png"]):
        lines.append(json.dumps(r).replace(json.dumps(image_refs(r)[0]), json.dumps(new), 1))
    manifest = os.path.join(root, "image_options.jsonl")
    open(manifest, "w").write("\n".join(lines) + "\n")
    spec = ref.MODELS["qwen2.5-vl"]

    def run(**options):
        report = tmp_path / f"errors_{len(list(tmp_path.iterdir()))}.jsonl"
        loader = stoker.Loader(manifest, batch_size=2, threads=2, max_error_rate=1.0,
                               error_report=str(report), **options)
        got = {}
        for b in loader:
            row, rows = 0, b["pixel_values"].numpy()
            for sid, grid in zip(b["sample_ids"].tolist(), b["image_grid_thw"].tolist()):
                n = grid[0] * grid[1] * grid[2]
                got[sid] = (grid, rows[row:row + n])
                row += n
        errors = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
        return got, errors

    def same(got, want):
        return got[0] == list(want.grid) and \
            np.array_equal(got[1].view(np.uint32), want.pixel_values.view(np.uint32))

    got, errors = run()
    assert not errors and same(got[0], ref.process_file(rotated, spec)), errors
    assert same(got[1], ref.process_file(tiny, spec))
    got, errors = run(exif="ignore", small_images="refuse")
    assert same(got[0], ref.process_file(rotated, spec, exif=False))
    assert ref.process_file(rotated, spec).grid != ref.process_file(rotated, spec, exif=False).grid
    assert 1 not in got and [e["code"] for e in errors] == ["InvalidArgument"], errors
    with pytest.raises(ValueError, match="exif"):
        stoker.Loader(manifest, exif="sideways")
    os.remove(manifest)
