#!/usr/bin/python3
"""The Python side of `stoker bench image`: the Hugging Face Qwen-VL *slow* image processor path
(Pillow + numpy, tests/python/hf_image_reference.py) timed per image, single core.

usage: /usr/bin/python3 bench/image_reference.py --model qwen2.5-vl [--core N] [--repeat R]
                                                 [--warmup K] --list FILES.txt | FILE...

Every file is read into memory first (stoker's side also times from bytes in memory), then each
pass times decode (Image.open + convert("RGB") + np.asarray) → resize (Pillow BICUBIC) →
rescale+normalise (float64 → float32) → patchify per image. BLAS/OpenMP pools are held to one
thread and the process is pinned to one core (the one stoker used), so both sides get one core.
Prints one JSON object: images/s and ms/image of the best pass by thread CPU time (robust to
other processes sharing the core), the best wall-clock images/s, and the per-stage split.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
import hf_image_reference as ref  # noqa: E402


def one_image(data: bytes, spec: ref.ModelSpec, stages: list):
    t0 = time.perf_counter()
    with Image.open(io.BytesIO(data)) as img:
        if img.mode != "RGB":
            img = img.convert("RGB")
        rgb = np.asarray(img, dtype=np.uint8)
    t1 = time.perf_counter()
    h, w = rgb.shape[:2]
    rh, rw = ref.smart_resize(h, w, spec.factor, spec.min_pixels, spec.max_pixels)
    resized = ref.resize(rgb, rh, rw)
    t2 = time.perf_counter()
    normalized = ref.rescale_normalize(resized, spec)
    t3 = time.perf_counter()
    pixel_values, _ = ref.patchify(normalized.transpose(2, 0, 1), spec)
    pixel_values = np.ascontiguousarray(pixel_values)  # the HF processor returns a real array
    t4 = time.perf_counter()
    stages[0] += t1 - t0
    stages[1] += t2 - t1
    stages[2] += t3 - t2
    stages[3] += t4 - t3
    return pixel_values.shape[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-vl", choices=sorted(ref.MODELS))
    ap.add_argument("--core", type=int, default=None, help="pin to this CPU")
    ap.add_argument("--repeat", type=int, default=1, help="timed passes (best one reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed images first")
    ap.add_argument("--list", help="file with one image path per line")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()

    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    files = list(args.files)
    if args.list:
        files += [l for l in pathlib.Path(args.list).read_text().splitlines() if l.strip()]
    if not files:
        ap.error("no images")
    spec = ref.MODELS[args.model]
    blobs = [pathlib.Path(f).read_bytes() for f in files]

    scratch = [0.0] * 4
    for data in blobs[:args.warmup]:
        one_image(data, spec, scratch)

    # Best pass by this thread's CPU time (user + system): other processes time-slicing the
    # shared core do not count against it. Wall time is reported too.
    best = None
    best_wall = None
    rows = 0
    for _ in range(max(1, args.repeat)):
        stages = [0.0] * 4
        rows = 0
        t0 = time.perf_counter()
        c0 = time.thread_time()
        for data in blobs:
            rows += one_image(data, spec, stages)
        cpu = time.thread_time() - c0
        wall = time.perf_counter() - t0
        if best is None or cpu < best[0]:
            best = (cpu, stages, wall)
        best_wall = wall if best_wall is None else min(best_wall, wall)
    elapsed, stages, wall = best
    # Stages are timed by wall clock; scale them to the pass's CPU time.
    scale = elapsed / wall if wall > 0 else 1.0
    stages = [s * scale for s in stages]
    n = len(blobs)
    print(json.dumps({
        "impl": "pillow+numpy (HF slow processor)",
        "model": args.model,
        "images": n,
        "rows": rows,
        "cpu_seconds": elapsed,
        "images_per_s": n / elapsed,
        "ms_per_image": 1000 * elapsed / n,
        "wall_seconds": best_wall,
        "wall_images_per_s": n / best_wall,
        "stages_ms_per_image": {name: 1000 * s / n for name, s in
                                zip(("decode", "resize", "normalize", "patchify"), stages)},
        "core": args.core,
        "pillow": Image.__version__,
        "numpy": np.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
