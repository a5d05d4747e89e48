#!/usr/bin/python3
"""The peer of `stoker bench image`: the Hugging Face Qwen2-VL *slow* image processor path
(Pillow + numpy, hf_image_reference.py beside this file), timed per image on one core.

usage: /usr/bin/python3 bench/image_reference.py --model qwen2.5-vl --core N --warmup W
           --passes P [--dtype f32|bf16] --list FILES.txt

Every file is read into memory first (stoker's side also works from bytes in memory). Two
measurements, each with W untimed passes over the set and then P timed ones, the same numbers
stoker uses for itself:

  full    Image.open → ImageOps.exif_transpose (transformers' load_image) → convert("RGB") →
          numpy → smart_resize → Image.resize(BICUBIC) → float64 rescale → float32 normalise →
          patchify (np.ascontiguousarray, as the HF processor returns a real array)
  resize  Image.resize((W', H'), BICUBIC) alone, on images decoded before timing

Only the per-image work is timed (time.thread_time around it: robust to other processes slicing
the core); after each image, untimed, its output is digested — (rows, crc32 of pixel_values) for
`full`, (height, width, crc32 of the uint8 pixels) for `resize` — so stoker can compare every
image of every timed pass. Prints one JSON object.
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
import zlib  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import hf_image_reference as ref  # noqa: E402

STAGES = ("decode", "resize", "normalize", "patchify")


def decode(data: bytes) -> Image.Image:
    """transformers' load_image on bytes: open, EXIF orientation, RGB; pixels loaded."""
    img = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    if img.mode != "RGB":
        img = img.convert("RGB")
    img.load()
    return img


def full(data: bytes, spec: ref.ModelSpec, stages: list) -> np.ndarray:
    t0 = time.thread_time()
    rgb = np.asarray(decode(data), dtype=np.uint8)
    t1 = time.thread_time()
    h, w = rgb.shape[:2]
    rh, rw = ref.smart_resize(h, w, spec.factor, spec.min_pixels, spec.max_pixels)
    resized = ref.resize(rgb, rh, rw)
    t2 = time.thread_time()
    normalized = ref.rescale_normalize(resized, spec)
    t3 = time.thread_time()
    pixel_values, _ = ref.patchify(normalized.transpose(2, 0, 1), spec)
    pixel_values = np.ascontiguousarray(pixel_values)
    t4 = time.thread_time()
    for k, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
        stages[k] += dt
    return pixel_values


def run_passes(items, work, digest, warmup: int, passes: int):
    """`work(item)` timed per item; `digest(output)` untimed. Returns the best pass by CPU time,
    the best wall time and every timed pass's digests."""
    for _ in range(warmup):
        for it in items:
            work(it)
    best_cpu = best_wall = None
    digests = []
    for _ in range(passes):
        cpu = wall = 0.0
        pass_digests = []
        for it in items:
            w0, c0 = time.perf_counter(), time.thread_time()
            out = work(it)
            cpu += time.thread_time() - c0
            wall += time.perf_counter() - w0
            pass_digests.append(digest(out))
        digests.append(pass_digests)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        best_wall = wall if best_wall is None else min(best_wall, wall)
    return best_cpu, best_wall, digests


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-vl", choices=sorted(ref.MODELS))
    ap.add_argument("--core", type=int, default=None, help="pin to this CPU")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes over the set")
    ap.add_argument("--passes", type=int, default=3, help="timed passes (the best counts)")
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"),
                    help="digest pixel_values as float32 or as bf16 bits (stoker's output)")
    ap.add_argument("--list", required=True, help="file with one image path per line")
    args = ap.parse_args()

    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    files = [ln for ln in pathlib.Path(args.list).read_text().splitlines() if ln.strip()]
    spec = ref.MODELS[args.model]
    blobs = [pathlib.Path(f).read_bytes() for f in files]

    def pv_digest(pv):
        data = ref.to_bf16_bits(pv) if args.dtype == "bf16" else pv
        return [int(pv.shape[0]), zlib.crc32(np.ascontiguousarray(data))]

    stages = [0.0] * len(STAGES)
    f_cpu, f_wall, f_digests = run_passes(blobs, lambda b: full(b, spec, stages), pv_digest,
                                          args.warmup, args.passes)
    # Stage split: summed over all passes (warm-up included), scaled to one pass per image.
    done = (args.warmup + args.passes) * len(blobs)

    # Resize alone: the same target sizes, on images decoded (untimed) beforehand.
    decoded = []
    for b in blobs:
        img = decode(b)
        rh, rw = ref.smart_resize(img.height, img.width, spec.factor, spec.min_pixels,
                                  spec.max_pixels)
        decoded.append((img, rw, rh))

    def resize(item):
        img, rw, rh = item
        return img.resize((rw, rh), resample=Image.BICUBIC, reducing_gap=None)

    def rgb_digest(img):
        a = np.asarray(img, dtype=np.uint8)
        return [int(a.shape[0]), int(a.shape[1]), zlib.crc32(np.ascontiguousarray(a))]

    r_cpu, r_wall, r_digests = run_passes(decoded, resize, rgb_digest, args.warmup, args.passes)
    print(json.dumps({
        "peer": "HF Qwen2-VL slow image processor path: Pillow + numpy",
        "pillow": Image.__version__, "numpy": np.__version__, "core": args.core,
        "images": len(blobs), "warmup": args.warmup, "passes": args.passes,
        "full": {"cpu_s": f_cpu, "wall_s": f_wall, "digests": f_digests,
                 "stages_ms": {s: 1000 * t / done for s, t in zip(STAGES, stages)}},
        "resize": {"cpu_s": r_cpu, "wall_s": r_wall, "digests": r_digests},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
