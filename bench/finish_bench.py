"""`stoker bench finish`: the production Loader finishing pixels on the CPU (finish="cpu", the
default: batches hold float32 pixel_values) vs handing the resized uint8 bytes to the trainer's
device (finish="device": batches hold pixel_values_uint8 + the value table; stoker.finish builds
pixel_values there, bit-identical — issue 26), on the same images: `--set photo` (default: one
photo-like JPEG per record, `stoker synth --images-only`, 1920x1080; 256 records, 64 with
--quick) or `--set mixed` (the default `stoker synth` mix: text-only, multi-image, JPEG/PNG/WebP
of every mode and size — the README demo's kind of set).

Policy (both contenders, each in its own process so its CPU and peak RSS are its own): the Loader
is created once with prefetch 4, `--warmup` epochs are iterated untimed, then `--passes` timed
epochs as one window (at least 4x what the Loader buffers; the Loader is given one epoch more
than is iterated, so it is producing at the window's end as at its start — bench/README.md,
`bench torch`). The consumer, the same on both sides, digests every batch of every epoch — its
sample ids, image rows, grids and the CRC-32 of the finished pixel_values rows of every image:
all of them (warm-up) or one merge band of each, a different band from image to image (timed
epochs); the device contender finishes those pixels with stoker.finish(..., device="cpu"), image
by image — and the digests of every epoch are compared batch by batch.
No ratio is printed unless every digest matched (else MISMATCH, exit 1).

Measured:
- Loader CPU per image over the window = the process's CPU − the consumer thread's CPU + the
  consumer thread's CPU inside next() and the batch's release (what the Loader costs the caller's
  thread); the consumer's digests and its torch finish are not the Loader's.
- torch finish on cpu, timed apart in its own process: stoker.finish of whole batches (one
  epoch, the first batch excluded; thread CPU, torch at 1 thread, the output freed inside the
  timing) — per image and per batch. On a CUDA device it is a table lookup on the GPU: no host
  CPU but the upload of the uint8 bytes.
- bytes per sample in the ring: the batch block's tensors (all of them) ÷ its samples, over the
  window; the arena's plan (prefetch 4 + 2 batches) and each contender's peak RSS.
- samples/s over the window: the consumer's work is in the loop on both sides (a CRC of one merge
  band of each image; on the device side also the finish of those bands on this CPU), printed beside it.
`ratio: N` = Loader CPU per image, finish="cpu" ÷ finish="device" (target >= 1.5).

`--run finish-time --data D --batch-size B` (also used by `stoker bench ladder`): one JSON line
with the torch finish time per batch on cpu of D's batches (finish="device").
Run with Debian's /usr/bin/python3 (torch 1.13, numpy).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib

MAX_LENGTH = 32768
MERGE = 2  # merge_size of the three Qwen-VL models (the bench's default model)
PREFETCH = 4
WINDOW_FACTOR = 4


def process_cpu_s():
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def batch_bytes(b):
    return sum(t.numel() * t.element_size() for t in b.values() if hasattr(t, "element_size"))


def finished_crc(stoker, b, whole):
    """CRC-32 of finished pixel_values rows of every image of the batch — all its rows (`whole`:
    warm-up), or one merge band of it (gw·merge rows: band i mod (gh/merge) of image i, the same
    pixels as that band's raster rows; timed epochs, so the consumer's own work stays small on
    both sides). The CPU path's own rows, or stoker.finish of those uint8 pixels (finish=
    "device") — the same bytes in the same order on both sides, so the same CRC. None without
    images."""
    import numpy as np
    import torch

    grid = b.get("image_grid_thw")
    if grid is None or grid.shape[0] == 0:
        return None
    crc, r0 = 0, 0
    for i, (gt, gh, gw) in enumerate(grid.tolist()):
        n = gt * gh * gw
        if whole:
            lo, hi, part = r0, r0 + n, grid[i:i + 1]
        else:  # an image is one frame (gt 1): band k is rows k·gw·m .. (k+1)·gw·m of it
            k = i % (gh // MERGE)
            lo, hi = r0 + k * gw * MERGE, r0 + (k + 1) * gw * MERGE
            part = grid.new_tensor([[1, MERGE, gw]])
        if "pixel_values" in b:
            rows = b["pixel_values"][lo:hi]
        else:
            rows = stoker.finish({"pixel_values_uint8": b["pixel_values_uint8"][lo:hi],
                                  "pixel_values_lut": b["pixel_values_lut"],
                                  "pixel_values_patching": b["pixel_values_patching"],
                                  "image_grid_thw": part}, device="cpu")["pixel_values"]
        if rows.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits
            rows = rows.contiguous().view(torch.int16)
        crc = zlib.crc32(np.ascontiguousarray(rows.numpy()), crc)
        r0 += n
    return crc


def digest_batch(stoker, b, whole):
    """{the batch's sample ids: [images, rows, CRC-32 of its grids, CRC-32 of its images' finished
    rows (finished_crc)]}: both contenders deliver the same batches (same seed and options)."""
    import numpy as np

    ids = ",".join(str(i) for i in b["sample_ids"].tolist())
    grid = b.get("image_grid_thw")
    crc = finished_crc(stoker, b, whole)
    if grid is None or crc is None:
        return {ids: [0, 0, 0, 0]}
    n = int(grid.prod(dim=1).sum())
    return {ids: [int(grid.shape[0]), n, zlib.crc32(np.ascontiguousarray(grid.numpy())), crc]}


def images_in(b):
    grid = b.get("image_grid_thw")
    return 0 if grid is None else int(grid.shape[0])


def buffered_samples(batch_size, prefetch=PREFETCH):
    """The Loader's default window of samples in flight (2·B·(prefetch+1)) + the ring."""
    return 2 * batch_size * (prefetch + 1) + batch_size * prefetch


def run_one(args):
    """One contender (args.run = cpu | device) in this process; prints one JSON line."""
    import torch

    import stoker

    torch.set_num_threads(1)  # stoker.finish runs on the consumer's thread: its CPU is that thread's
    epochs = args.warmup + args.passes
    loader = stoker.Loader(args.data, batch_size=args.batch_size, threads=args.threads,
                           prefetch=PREFETCH, max_length=MAX_LENGTH, seed=0, epochs=epochs + 1,
                           finish=args.run, pixel_dtype=args.pixel_dtype)
    it = iter(loader)
    results, window = [], {}
    ring = {"bytes": 0, "samples": 0, "images": 0}
    for e in range(epochs):
        timed = e >= args.warmup
        if e == args.warmup:
            window = {"t": time.perf_counter(), "cpu": process_cpu_s(), "own": time.thread_time(),
                      "next": 0.0}
        digests, samples = {}, 0
        te = time.perf_counter()
        if e > 0:
            it = iter(loader)
        while True:
            t = time.thread_time()
            try:
                b = next(it)
            except StopIteration:
                if timed:
                    window["next"] += time.thread_time() - t
                break
            if timed:
                window["next"] += time.thread_time() - t
                ring["bytes"] += batch_bytes(b)
                ring["samples"] += int(b["sample_ids"].shape[0])
                ring["images"] += images_in(b)
            digests.update(digest_batch(stoker, b, whole=not timed))
            samples += int(b["sample_ids"].shape[0])
            t = time.thread_time()
            del b  # the block goes back to the arena: the Loader's work, on this thread
            if timed:
                window["next"] += time.thread_time() - t
        results.append({"seconds": time.perf_counter() - te, "samples": samples,
                        "digests": digests, "timed": timed})
    window_s = time.perf_counter() - window["t"]
    window_cpu = process_cpu_s() - window["cpu"]
    own = time.thread_time() - window["own"]
    stats = loader.stats()
    del it, loader
    print(json.dumps({
        "epochs": results, "window_s": window_s,
        "window_samples": sum(r["samples"] for r in results if r["timed"]),
        "window_images": ring["images"],
        "loader_cpu_s": window_cpu - own + window["next"], "consumer_cpu_s": own - window["next"],
        "ring_bytes_per_sample": ring["bytes"] / max(1, ring["samples"]),
        "arena_plan": stats.get("arena_plan"), "arena_planned_bytes": stats.get("arena_planned_bytes"),
        "arena_peak_bytes": stats.get("arena_peak_bytes"), "peak_rss_mb": peak_rss_mb()}))


def run_finish_time(args):
    """torch finish on cpu per batch of args.data (finish="device", prefetch mode defaults)."""
    import torch

    import stoker

    torch.set_num_threads(1)
    loader = stoker.Loader(args.data, batch_size=args.batch_size, threads=args.threads,
                           finish="device", seed=0, max_length=args.max_length,
                           pixel_dtype=args.pixel_dtype, epochs=2)
    times, images, i = [], 0, 0
    for _ in range(2):  # a second epoch when the first has too few batches
        for b in loader:
            t = time.thread_time()
            f = stoker.finish(b, device="cpu")
            del f
            if i > 0:
                times.append(time.thread_time() - t)
                images += images_in(b)
            i += 1
            if len(times) >= args.max_batches:
                break
        if len(times) >= args.max_batches:
            break
    times.sort()
    print(json.dumps({"batches": len(times), "mean_ms": 1e3 * sum(times) / max(1, len(times)),
                      "p50_ms": 1e3 * times[len(times) // 2] if times else 0.0,
                      "images": images, "total_s": sum(times)}))


def compare(res, n_records):
    """Every batch of every epoch, by its sample ids; every record delivered in every epoch."""
    ref, problems, batches, images = res["cpu"]["epochs"], [], 0, 0
    for e, (mine, theirs) in enumerate(zip(res["device"]["epochs"], ref)):
        for who, r in (("cpu", theirs), ("device", mine)):
            if r["samples"] != n_records:
                problems.append(f"finish={who} epoch {e + 1}: {r['samples']} samples, "
                                f"expected {n_records}")
        if len(mine["digests"]) != len(theirs["digests"]):
            problems.append(f"epoch {e + 1}: {len(mine['digests'])} batches vs "
                            f"{len(theirs['digests'])}")
        for ids, d in theirs["digests"].items():
            batches += 1
            images += d[0]
            if mine["digests"].get(ids) != d:
                problems.append(f"epoch {e + 1} batch of samples {ids}: finish=device "
                                f"{mine['digests'].get(ids)} vs finish=cpu {d}")
    return problems, batches, images


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stoker-bin", required=True)
    ap.add_argument("--python-dir", default=None, help="<build>/python (holds stoker/_stoker)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="records = images (64 quick, 256)")
    ap.add_argument("--size", default="1920x1080", help="image size WxH (1920x1080)")
    ap.add_argument("--set", default="photo", choices=["photo", "mixed"],
                    help="photo: one photo-like JPEG per record (--size); mixed: the default "
                         "`stoker synth` mix (text-only, multi-image, JPEG/PNG/WebP, every mode "
                         "and size: the README demo's kind of set)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2, help="the Loader's CPU threads")
    ap.add_argument("--pixel-dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--warmup", type=int, default=1, help="untimed epochs, both contenders (1)")
    ap.add_argument("--passes", type=int, default=None,
                    help="timed epochs (default: enough for 4x the samples the Loader buffers)")
    ap.add_argument("--data", default=None, help="an image-only JSONL instead of generating one")
    ap.add_argument("--max-length", type=int, default=8192, help=argparse.SUPPRESS)
    ap.add_argument("--max-batches", type=int, default=16, help=argparse.SUPPRESS)
    ap.add_argument("--run", choices=["cpu", "device", "finish-time"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.python_dir:
        sys.path.insert(0, args.python_dir)
    if args.run == "finish-time":
        return run_finish_time(args)
    if args.run:
        return run_one(args)

    n = args.n or (64 if args.quick else 256)
    tmp = tempfile.TemporaryDirectory(prefix="stoker-bench-finish-")
    if args.data is None:
        out = os.path.join(tmp.name, "synth")
        what = ["--images-only", "--size", args.size] if args.set == "photo" else []
        subprocess.run([args.stoker_bin, "synth", "--out", out, "--n", str(n), "--seed", "1",
                        *what], check=True, capture_output=True)
        args.data = os.path.join(out, "data.jsonl")
    with open(args.data, encoding="utf-8") as f:
        n = sum(1 for ln in f if ln.strip())
    buffered = buffered_samples(args.batch_size)
    if args.passes is None:
        args.passes = max(1, -(-WINDOW_FACTOR * buffered // n))
    kind = (f"one photo-like {args.size} JPEG each" if args.set == "photo" else
            "the synth mix (text-only, multi-image, JPEG/PNG/WebP of every mode and size)")
    print(f"stoker bench finish: {n} records, {kind}; batch "
          f"{args.batch_size}, Loader threads={args.threads}, prefetch {PREFETCH}, pixel dtype "
          f"{args.pixel_dtype}; {os.cpu_count()} CPUs; each side: {args.warmup} warm-up epoch(s), "
          f"then {args.passes} timed epoch(s) as one window of {n * args.passes} samples "
          f"({n * args.passes / buffered:.1f}x the {buffered} samples the Loader buffers)")
    if n * args.passes < WINDOW_FACTOR * buffered:
        print(f"WARNING: the timed window ({n * args.passes} samples) is under {WINDOW_FACTOR}x "
              f"what the Loader buffers ({buffered}): a smoke run, not a measurement")
    sys.stdout.flush()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.python_dir:
        env["PYTHONPATH"] = args.python_dir + os.pathsep + env.get("PYTHONPATH", "")
    res = {}
    for who in ("cpu", "device"):
        cmd = [sys.executable, os.path.abspath(__file__), "--stoker-bin", args.stoker_bin,
               "--run", who, "--data", args.data, "--batch-size", str(args.batch_size),
               "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--passes", str(args.passes), "--pixel-dtype", args.pixel_dtype]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise SystemExit(f"finish={who} run failed")
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    # torch's finish of whole batches on this CPU, in its own process (its outputs are not in
    # the contenders' RSS): every batch of one epoch but the first.
    cmd = [sys.executable, os.path.abspath(__file__), "--stoker-bin", args.stoker_bin,
           "--run", "finish-time", "--data", args.data, "--batch-size", str(args.batch_size),
           "--threads", str(args.threads), "--max-length", str(MAX_LENGTH),
           "--max-batches", str(max(1, -(-n // args.batch_size) - 1)),
           "--pixel-dtype", args.pixel_dtype]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit("the torch finish timing failed")
    res["finish"] = json.loads(p.stdout.strip().splitlines()[-1])
    report(res, args, n)


def report(res, args, n):
    print(f"\n{'':15} {'samples/s':>10} {'Loader CPU ms/image':>20} {'consumer ms/image':>18} "
          f"{'bytes/sample in ring':>21} {'arena planned MiB':>18} {'peak RSS MB':>12}")
    per = {}
    for who in ("cpu", "device"):
        r = res[who]
        k = r["window_samples"]
        per[who] = 1e3 * r["loader_cpu_s"] / max(1, r["window_images"])
        print(f"{'finish=' + who:15} {k / r['window_s']:10.2f} {per[who]:20.2f} "
              f"{1e3 * r['consumer_cpu_s'] / max(1, r['window_images']):18.2f} "
              f"{r['ring_bytes_per_sample']:21,.0f} "
              f"{(r['arena_planned_bytes'] or 0) / 2**20:18.1f} {r['peak_rss_mb']:12.0f}")
    print("  Loader CPU: the process's CPU over the window less the consumer thread's, plus its "
          "time in next() and releasing batches; consumer: the digests (CRC-32 of one merge band "
          "of each image's finished rows) and, for finish=device, stoker.finish of those bands "
          "on this CPU; "
          "samples/s: the window, consumer work in the loop on both sides")
    for who in ("cpu", "device"):
        print(f"arena finish={who}: {res[who]['arena_plan']}")
    f = res["finish"]
    b_cpu, b_dev = res["cpu"]["ring_bytes_per_sample"], res["device"]["ring_bytes_per_sample"]
    print(f"bytes per sample in the ring: finish=cpu {b_cpu:,.0f} ({args.pixel_dtype} "
          f"pixel_values), finish=device {b_dev:,.0f} (uint8), {b_cpu / b_dev:.2f}x fewer")
    if not f["images"]:
        print("torch finish on cpu: no batch with images was timed")
    else:
        print(f"torch finish on cpu, timed apart (stoker.finish(batch, device='cpu') of whole "
              f"batches, torch 1.13 at 1 thread, its own process, {f['batches']} batches after the "
              f"first): {1e3 * f['total_s'] / f['images']:.2f} ms per image, {f['mean_ms']:.1f} ms "
              f"per batch of {args.batch_size} (p50 {f['p50_ms']:.1f}); on a CUDA device: a table "
              f"lookup on the GPU, no host CPU")
    problems, batches, images = compare(res, n)
    if problems:
        print(f"outputs compared: {batches} batches, {len(problems)} DIFFER; first:")
        for p in problems[:8]:
            print("  " + p)
        print("MISMATCH: finish=device's finished pixels differ from finish=cpu's; no ratio")
        sys.stdout.flush()
        raise SystemExit(1)
    epochs = args.warmup + args.passes
    print(f"outputs compared: {batches} batches ({images} images) over {epochs} epochs (sample "
          f"ids, rows, grids, CRC-32 of every finished pixel_values row in warm-up, of one "
          f"merge band of every image in timed epochs), identical")
    print(f"Loader CPU per image: finish=cpu {per['cpu']:.2f} ms, finish=device "
          f"{per['device']:.2f} ms (target ratio >= 1.5)")
    print(f"ratio: {per['cpu'] / per['device']:.2f}")


if __name__ == "__main__":
    main()
