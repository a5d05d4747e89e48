"""`stoker bench torch`: stoker's Python Loader vs torch.utils.data.DataLoader(num_workers=2)
running the Hugging Face slow image processor path, on an image-only dataset (photo-like
JPEGs, one per record: `stoker synth --images-only`; 1920x1080, 256 records, 64 with --quick), same machine, same run.

Both sides produce pixel_values + image_grid_thw (+ sample ids) for the same images through
what users run:
  stoker      stoker.Loader(data, threads=2): the C++ engine, batches over DLPack (zero-copy)
  served      stoker.serve in another process + stoker.Loader(connect=...) (shared memory)
  DataLoader  torch.utils.data.DataLoader(dataset, batch_size=B, shuffle=True, num_workers=2,
              persistent_workers=True, collate_fn=torch.cat of the samples); the dataset's
              __getitem__ is transformers' load_image (Image.open + exif_transpose + convert
              RGB) + the Qwen2-VL slow image processor in Pillow + numpy (hf_image_reference.py:
              Image.resize(BICUBIC), float64 rescale, float32 normalise, patchify)
No tokenizer is involved on the peer's side: Debian 12 packages no Python binding of HF's Rust
tokenizers (python3-tokenizers does not exist; no PyPI here), and a pure-Python BPE or a node
side process would make the peer slower than any real recipe. stoker's Loader still renders and
tokenises each record's short text (a few dozen tokens: its cost is counted against stoker).

Policy (the same for every contender, each in its own process so its CPU and peak RSS are its
own): the loader is created once; `--warmup` epochs are iterated untimed, then `--passes` timed
epochs, timed as one window (run_one says why that window is honest; by default it holds at
least 4x the samples stoker buffers, so `--quick` runs more epochs of a smaller set). In EVERY epoch every sample is digested in the consumer loop — its row count, its grid
and the CRC-32 of every 8th pixel_values row (every row in warm-up epochs) — and the digests of
each epoch are compared across contenders by sample id. Output: a table, the ratios, and last
`ratio: N` (stoker samples/s ÷ DataLoader samples/s) only when every digest matched, else exit 1.
Run with Debian's /usr/bin/python3 (torch 1.13, Pillow 9.4, numpy).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
MAX_LENGTH = 32768
TIMED_ROW_STRIDE = 8  # digest every 8th row in timed epochs (~2 ms per 1080p image), all in warm-up
PREFETCH = 4          # stoker's prefetch ring (the Loader's default)
WINDOW_FACTOR = 4     # the timed window holds at least this many times what stoker buffers


# ---- the peer: map-style dataset + collate ---------------------------------------------------

class HfImageDataset:
    """One record = its images through transformers' load_image + the slow image processor."""

    def __init__(self, jsonl: str, model: str = "qwen2.5-vl"):
        import hf_image_reference as hf

        self.hf, self.spec = hf, hf.MODELS[model]
        self.root = os.path.dirname(os.path.abspath(jsonl))
        with open(jsonl, encoding="utf-8") as f:
            self.lines = [ln for ln in f if ln.strip()]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        import numpy as np
        import torch

        pixels, grids = [], []
        for m in json.loads(self.lines[i])["messages"]:
            for part in m["content"] if isinstance(m["content"], list) else []:
                if part.get("type") == "image":
                    p = self.hf.process_file(os.path.join(self.root, part["image"]), self.spec)
                    pixels.append(p.pixel_values)
                    grids.append(p.grid)
        pv = np.concatenate(pixels) if pixels else np.zeros((0, self.spec.columns), np.float32)
        return {"pixel_values": torch.from_numpy(pv),
                "image_grid_thw": torch.tensor(grids, dtype=torch.int64).reshape(-1, 3),
                "sample_id": i}


def collate(items):
    import torch

    return {"pixel_values": torch.cat([it["pixel_values"] for it in items]),
            "image_grid_thw": torch.cat([it["image_grid_thw"] for it in items]),
            "sample_ids": torch.tensor([it["sample_id"] for it in items])}


# ---- measurement -----------------------------------------------------------------------------

class PeakRss:
    """Own peak RSS + the sum of every child's peak (VmHWM polled from /proc; pages shared after
    fork count in each, as RSS does), and the peak of the summed PSS (shared pages split)."""

    def __init__(self):
        self.children, self.pss_peak_kb, self.stop = {}, 0, False
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    @staticmethod
    def _kids():
        out = []
        try:
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/children") as f:
                    out += [int(p) for p in f.read().split()]
        except OSError:
            pass
        return out

    @staticmethod
    def _field_kb(path, key):
        try:
            with open(path) as f:
                for ln in f:
                    if ln.startswith(key):
                        return int(ln.split()[1])
        except OSError:
            pass
        return 0

    def _poll(self):
        k = 0
        while not self.stop:
            kids = self._kids()
            if k % 2 == 0:  # every 40 ms: smaps_rollup walks the page tables
                pss = sum(self._field_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in ["self"] + kids)
                self.pss_peak_kb = max(self.pss_peak_kb, pss)
            k += 1
            for pid in kids:
                self.children[pid] = max(self.children.get(pid, 0),
                                         self._field_kb(f"/proc/{pid}/status", "VmHWM:"))
            time.sleep(0.02)

    def result_mb(self):
        self.stop = True
        self.thread.join()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (own + sum(self.children.values())) / 1024, len(self.children), self.pss_peak_kb / 1024


def cpu_s():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def children_cpu_s():
    """CPU of live children (DataLoader's persistent workers are not reaped until the end)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in PeakRss._kids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def digest_batch(b, stride):
    """{sample id: [rows, t, h, w, crc32 of every `stride`-th row]} for one batch."""
    import numpy as np

    pv, grids, ids = b["pixel_values"], b["image_grid_thw"].tolist(), b["sample_ids"].tolist()
    if len(grids) != len(ids):  # image-only records: one image each
        raise SystemExit(f"expected one image per sample, got {len(grids)} grids for "
                         f"{len(ids)} samples")
    out, off = {}, 0
    for sid, (t, h, w) in zip(ids, grids):
        n = t * h * w
        rows = pv[off:off + n].numpy()[::stride]
        out[str(sid)] = [n, t, h, w, zlib.crc32(np.ascontiguousarray(rows))]
        off += n
    if off != pv.shape[0]:
        raise SystemExit(f"pixel_values has {pv.shape[0]} rows, the grids {off}")
    return out


def buffered_samples(batch_size, prefetch=PREFETCH):
    """What stoker may hold prepared ahead of its consumer: the window of samples in flight
    (2·B·(prefetch+1), the Loader's default) + the prefetch ring's batches."""
    return 2 * batch_size * (prefetch + 1) + batch_size * prefetch


def all_cpu_s():
    return cpu_s() + children_cpu_s()


def run_one(args):
    """One contender in this process; prints one JSON line.

    The timed window is ONE sustained stretch: from the start of the first timed epoch to the
    last batch of the last one, `passes` epochs of at least 4x the samples stoker buffers (the
    driver sizes them). stoker's Loader (in-process or served) is given one more epoch than is
    iterated, so it is producing at the end of the window as at its start: the work it did
    ahead before the clock started (its window + ring) equals the work it does ahead of the
    window's end, and cancels. A DataLoader does nothing ahead across epochs (its workers start
    an epoch when it is iterated), so its window holds exactly its epochs' work, fill included.
    CPU is read at both ends of the window (the process + its live children: DataLoader workers,
    the served mode's server)."""
    import torch

    torch.set_num_threads(1)
    rss = PeakRss()
    epochs = args.warmup + args.passes
    ahead = 0 if args.run == "dataloader" else 1  # the epoch that keeps stoker's stream going
    t0 = time.perf_counter()
    server = None
    if args.run == "served":  # a stoker.serve process on this node + this process as its client
        import stoker

        sock = os.path.join(tempfile.mkdtemp(prefix="stoker-bench-"), "s.sock")
        code = ("import sys, stoker; stoker.serve(sys.argv[1], socket=sys.argv[2], batch_size="
                f"{args.batch_size}, threads={args.threads}, prefetch={PREFETCH}, "
                f"max_length={MAX_LENGTH}, seed=0, epochs={epochs + ahead})")
        # The node server prints its attach and summary lines on stdout: not into this JSON.
        server = subprocess.Popen([sys.executable, "-c", code, args.data, sock],
                                  stdout=subprocess.DEVNULL)
        loader = stoker.Loader(connect=sock)
    elif args.run == "stoker":
        import stoker

        loader = stoker.Loader(args.data, batch_size=args.batch_size, threads=args.threads,
                               prefetch=PREFETCH, max_length=MAX_LENGTH, seed=0,
                               epochs=epochs + ahead)
    else:
        g = torch.Generator()
        g.manual_seed(0)
        loader = torch.utils.data.DataLoader(HfImageDataset(args.data), batch_size=args.batch_size,
                                             shuffle=True, generator=g, num_workers=args.workers,
                                             persistent_workers=True, collate_fn=collate)
    first, results = None, []
    window = {}
    for e in range(epochs):
        stride = 1 if e < args.warmup else TIMED_ROW_STRIDE
        if e == args.warmup:
            window = {"t": time.perf_counter(), "cpu": all_cpu_s()}
        digests, samples = {}, 0
        te = time.perf_counter()
        for b in loader:
            if first is None:
                first = time.perf_counter() - t0
            digests.update(digest_batch(b, stride))
            samples += int(b["sample_ids"].shape[0])
            del b  # like a trainer: the batch is dropped after its step (served: releases it)
        results.append({"seconds": time.perf_counter() - te, "samples": samples,
                        "digests": digests, "timed": e >= args.warmup})
    window_s = time.perf_counter() - window["t"]
    window_cpu = all_cpu_s() - window["cpu"]
    handoff = loader.stats().get("handoff_us_p50") if args.run != "dataloader" else None
    cpu = all_cpu_s()
    stats = loader.stats() if args.run == "stoker" else {}
    del loader  # DataLoader workers are joined here
    if server is not None:  # it would serve the extra epoch: stop it
        server.terminate()
        server.wait(timeout=120)
    peak, procs, pss = rss.result_mb()
    print(json.dumps({"epochs": results, "cpu_s": cpu, "wall_s": time.perf_counter() - t0,
                      "window_s": window_s, "window_cpu_s": window_cpu,
                      "window_samples": sum(r["samples"] for r in results if r["timed"]),
                      "first_s": first, "peak_rss_mb": peak, "peak_pss_mb": pss,
                      "children": procs, "handoff_us_p50": handoff,
                      "arena_plan": stats.get("arena_plan")}))


# ---- driver ------------------------------------------------------------------------------------

def compare(res, n_records):
    """Every epoch of every contender against the DataLoader's same epoch, by sample id."""
    ref = res["dataloader"]["epochs"]
    problems, compared = [], 0
    for who, r in res.items():
        for e, (mine, theirs) in enumerate(zip(r["epochs"], ref)):
            if len(mine["digests"]) != n_records:
                problems.append(f"{who} epoch {e + 1}: {len(mine['digests'])} samples, "
                                f"expected {n_records}")
            for sid, d in theirs["digests"].items():
                compared += who != "dataloader"
                if who != "dataloader" and mine["digests"].get(sid) != d:
                    problems.append(f"{who} epoch {e + 1} sample {sid}: "
                                    f"{mine['digests'].get(sid)} vs DataLoader {d}")
    return problems, compared


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stoker-bin", required=True)
    ap.add_argument("--python-dir", default=None, help="<build>/python (holds stoker/_stoker)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="records = images (64 quick, 256)")
    ap.add_argument("--size", default=None, help="image size WxH (1920x1080)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="stoker CPU threads")
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed epochs, every contender (1)")
    ap.add_argument("--passes", type=int, default=None,
                    help="timed epochs (default: enough for 4x the samples stoker buffers)")
    ap.add_argument("--data", default=None, help="an image-only JSONL instead of generating one")
    ap.add_argument("--run", choices=["stoker", "served", "dataloader"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.python_dir:
        sys.path.insert(0, args.python_dir)
    if args.warmup is None:
        args.warmup = 1
    if args.size is None:  # quick: fewer records, same images (the same arena regime: at 1080p
        args.size = "1920x1080"  # a batch is 387 MiB, so 2 fit the default 1 GiB arena)
    if args.run:
        return run_one(args)

    n = args.n or (64 if args.quick else 256)
    tmp = tempfile.TemporaryDirectory(prefix="stoker-bench-torch-")
    if args.data is None:
        out = os.path.join(tmp.name, "synth")
        subprocess.run([args.stoker_bin, "synth", "--images-only", "--out", out, "--n", str(n),
                        "--seed", "1", "--size", args.size], check=True, capture_output=True)
        args.data = os.path.join(out, "data.jsonl")
    with open(args.data, encoding="utf-8") as f:
        n = sum(1 for ln in f if ln.strip())
    buffered = buffered_samples(args.batch_size)
    if args.passes is None:  # a timed window of at least WINDOW_FACTOR x what stoker buffers
        args.passes = max(1, -(-WINDOW_FACTOR * buffered // n))
    print(f"stoker bench torch: {n} records, one photo-like {args.size} JPEG each; batch "
          f"{args.batch_size}; stoker threads={args.threads} vs DataLoader num_workers="
          f"{args.workers}; {os.cpu_count()} CPUs; every contender: {args.warmup} warm-up "
          f"epoch(s), then {args.passes} timed epoch(s) as one window of {n * args.passes} "
          f"samples ({n * args.passes / buffered:.1f}x the {buffered} samples stoker buffers: "
          f"window + ring)")
    if n * args.passes < WINDOW_FACTOR * buffered:
        print(f"WARNING: the timed window ({n * args.passes} samples) is under {WINDOW_FACTOR}x "
              f"what stoker buffers ({buffered}): work done before the clock started weighs "
              f"on the ratio (a smoke run, not a measurement)")
    print("peer: torch.utils.data.DataLoader(num_workers=%d, persistent_workers=True) over "
          "transformers' load_image + the Qwen2-VL slow image processor (Pillow + numpy); no "
          "tokenizer on the peer's side (see bench/README.md)" % args.workers)
    sys.stdout.flush()

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.python_dir:
        env["PYTHONPATH"] = args.python_dir + os.pathsep + env.get("PYTHONPATH", "")
    res = {}
    for who in ("stoker", "served", "dataloader"):
        cmd = [sys.executable, os.path.abspath(__file__), "--stoker-bin", args.stoker_bin,
               "--run", who, "--data", args.data, "--batch-size", str(args.batch_size),
               "--workers", str(args.workers), "--threads", str(args.threads),
               "--warmup", str(args.warmup), "--passes", str(args.passes)]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise SystemExit(f"{who} run failed")
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    report(res, args, n)


def report(res, args, n):
    rows = []
    for key, name in (("stoker", "stoker (in-process)"), ("served", "stoker (served, shm)"),
                      ("dataloader", f"DataLoader(num_workers={args.workers})")):
        r = res[key]
        rows.append((name, r["window_samples"] / r["window_s"],
                     r["window_cpu_s"] / r["window_samples"] * 1e3, r["peak_rss_mb"],
                     r["peak_pss_mb"], r["first_s"]))
    print(f"{'':28} {'samples/s':>10} {'CPU ms/sample':>14} {'peak RSS MB':>12} "
          f"{'peak PSS MB':>12} {'first batch s':>14}")
    for name, sps, cpu, rss, pss, first in rows:
        print(f"{name:28} {sps:10.2f} {cpu:14.1f} {rss:12.0f} {pss:12.0f} {first:14.3f}")
    print("  samples/s and CPU ms/sample: the timed window (all timed epochs as one stretch; "
          "the process and its workers or server, digests included); peak RSS sums every "
          "process's peak (served: client + "
          "server, the arena in both; DataLoader: main + workers, pages shared after fork in "
          "each); peak PSS: max of the summed proportional set size (shared pages split)")
    if res["stoker"].get("arena_plan"):
        print(f"stoker arena: {res['stoker']['arena_plan']}")
    print(f"hand-off p50 (C++ batch ready -> dict of torch tensors): in-process "
          f"{res['stoker']['handoff_us_p50']:.0f} us, served {res['served']['handoff_us_p50']:.0f} us")
    dl = rows[2]
    for name, row in (("in-process", rows[0]), ("served", rows[1])):
        print(f"stoker {name} / DataLoader: samples/s {row[1] / dl[1]:.2f}x, CPU per sample "
              f"{row[2] / dl[2]:.2f}x, peak RSS {row[3] / dl[3]:.2f}x, peak PSS "
              f"{row[4] / dl[4]:.2f}x, time to first batch {row[5] / dl[5]:.2f}x")
    print(f"CPU per sample: stoker {rows[0][2]:.1f} ms, served {rows[1][2]:.1f} ms, DataLoader "
          f"{dl[2]:.1f} ms ({rows[0][2] / dl[2]:.2f}x)")
    problems, compared = compare(res, n)
    epochs = args.warmup + args.passes
    if problems:
        print(f"outputs compared: {compared} samples, {len(problems)} DIFFER; first:")
        for p in problems[:8]:
            print("  " + p)
        print("MISMATCH: stoker and the DataLoader disagree; no ratio")
        sys.stdout.flush()
        raise SystemExit(1)
    print(f"outputs compared: {compared} samples (stoker and served vs DataLoader, {epochs} "
          f"epochs: rows, grid, CRC-32 of every row in warm-up epochs and every "
          f"{TIMED_ROW_STRIDE}th row in timed ones), identical")
    print(f"ratio: {rows[0][1] / dl[1]:.2f}")


if __name__ == "__main__":
    main()
