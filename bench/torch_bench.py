"""`stoker bench torch`: stoker's Loader vs torch.utils.data.DataLoader(num_workers=2) running the
equivalent pure-Python pipeline, same machine, same run, same synthetic dataset, same outputs.

Python path (what a typical HF-based SFT loader does per sample, in the DataLoader's workers):
json.loads → the Qwen2-VL chat template rendered with jinja2 (HF apply_chat_template settings)
→ Pillow + numpy image path exactly as the HF slow processor (tests/python/hf_image_reference.py,
the colleague's oracle, imported) → <|image_pad|> expanded to grid/merge² → byte-level BPE with
`regex` (bench/py_qwen_tokenizer.py) → labels; collate pads to the longest row. mRoPE
position_ids are skipped in the Python path (said in the output).

Contenders: stoker in-process, stoker served (a `stoker.serve` process + a `Loader(connect=)`
client, zero-copy over shared memory), DataLoader. Each runs in its own process tree (so peak
RSS and CPU are its own; child processes' peaks are polled from /proc and summed). Output: a table, the ratios, last line `ratio: N`
(stoker samples/s ÷ DataLoader samples/s). Run with Debian's /usr/bin/python3.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
TOKENIZER_DIR = os.path.join(ROOT, "tools", "oracles", "node_modules", "@lenml",
                             "tokenizer-qwen2_5", "models")
TEMPLATE = os.path.join(ROOT, "data", "templates", "qwen2_vl.jinja")
MAX_LENGTH = 32768
IMAGE_PAD, PAD_ID, IGNORE = 151655, 151643, -100


# ---- the pure-Python pipeline (map-style dataset + collate) ----------------------------------

class PyVlmDataset:
    def __init__(self, jsonl: str, model: str = "qwen2.5-vl"):
        import jinja2.sandbox
        import hf_image_reference as hf
        from py_qwen_tokenizer import QwenTokenizer

        self.hf = hf
        self.spec = hf.MODELS[model]
        self.root = os.path.dirname(os.path.abspath(jsonl))
        with open(jsonl, encoding="utf-8") as f:
            self.lines = [ln for ln in f if ln.strip()]
        self.tok = QwenTokenizer(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        with open(TEMPLATE, encoding="utf-8") as f:
            self.template = env.from_string(f.read())
        self.im_start, self.im_end = self.tok.added["<|im_start|>"], self.tok.added["<|im_end|>"]
        self.assistant = self.tok.encode("assistant\n")

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        import numpy as np
        import torch

        rec = json.loads(self.lines[i])
        messages = rec["messages"]
        pixels, grids = [], []
        for m in messages:
            if isinstance(m["content"], list):
                for part in m["content"]:
                    if part.get("type") == "image" or "image" in part:
                        p = self.hf.process_file(os.path.join(self.root, part["image"]), self.spec)
                        pixels.append(p.pixel_values)
                        grids.append(p.grid)
        text = self.template.render(messages=messages, add_generation_prompt=False)
        merge2 = self.spec.merge_size ** 2
        chunks = text.split("<|image_pad|>")
        text = chunks[0] + "".join("<|image_pad|>" * (t * h * w // merge2) + c
                                   for (t, h, w), c in zip(grids, chunks[1:]))
        ids = self.tok.encode(text)[:MAX_LENGTH]
        labels = [IGNORE] * len(ids)  # supervise assistant turns: after "<|im_start|>assistant\n"
        k, a = 0, len(self.assistant)
        while k < len(ids):
            if ids[k] == self.im_start and ids[k + 1:k + 1 + a] == self.assistant:
                j = k + 1 + a
                while j < len(ids) and ids[j] != self.im_end:
                    labels[j] = ids[j]
                    j += 1
                if j < len(ids):
                    labels[j] = ids[j]
                k = j
            k += 1
        cols = self.spec.columns
        pv = np.concatenate(pixels) if pixels else np.zeros((0, cols), np.float32)
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels),
                "pixel_values": torch.from_numpy(pv),
                "image_grid_thw": torch.tensor(grids, dtype=torch.int64).reshape(-1, 3),
                "sample_id": i}


def py_collate(items):
    import torch

    L = max(len(it["input_ids"]) for it in items)
    B = len(items)
    ids = torch.full((B, L), PAD_ID, dtype=torch.int64)
    labels = torch.full((B, L), IGNORE, dtype=torch.int64)
    mask = torch.zeros((B, L), dtype=torch.int64)
    for r, it in enumerate(items):
        n = len(it["input_ids"])
        ids[r, :n], labels[r, :n], mask[r, :n] = it["input_ids"], it["labels"], 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask,
            "pixel_values": torch.cat([it["pixel_values"] for it in items]),
            "image_grid_thw": torch.cat([it["image_grid_thw"] for it in items]),
            "sample_ids": torch.tensor([it["sample_id"] for it in items])}


# ---- measurement ----------------------------------------------------------------------------

class PeakRss:
    """Own peak RSS + the sum of every child's peak (VmHWM polled from /proc; shared pages of
    forked workers count in each, as RSS does)."""

    def __init__(self):
        self.children = {}
        self.pss_peak_kb = 0  # max over polls of Σ Pss (self + children): shared pages split
        self.stop = False
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _kids(self):
        out = []
        try:
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/children") as f:
                    out += [int(p) for p in f.read().split()]
        except OSError:
            pass
        return out

    @staticmethod
    def _pss_kb(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for ln in f:
                    if ln.startswith("Pss:"):
                        return int(ln.split()[1])
        except OSError:
            pass
        return 0

    def _poll(self):
        k = 0
        while not self.stop:
            kids = self._kids()
            if k % 2 == 0:  # every 40 ms: smaps_rollup walks the page tables
                pss = self._pss_kb("self") + sum(self._pss_kb(p) for p in kids)
                self.pss_peak_kb = max(self.pss_peak_kb, pss)
            k += 1
            for pid in kids:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for ln in f:
                            if ln.startswith("VmHWM:"):
                                kb = int(ln.split()[1])
                                self.children[pid] = max(self.children.get(pid, 0), kb)
                except OSError:
                    pass
            time.sleep(0.02)

    def total_mb(self):
        self.stop = True
        self.thread.join()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (own + sum(self.children.values())) / 1024, len(self.children), \
            self.pss_peak_kb / 1024


def cpu_s():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_one(args):
    """One contender in this process; prints one JSON line."""
    import torch

    torch.set_num_threads(1)
    rss = PeakRss()
    c0, t0 = cpu_s(), time.perf_counter()
    server = None
    if args.run == "served":  # a stoker.serve process on this node + this process as its client
        import stoker

        sock = os.path.join(tempfile.mkdtemp(prefix="stoker-bench-"), "s.sock")
        code = ("import sys, stoker; stoker.serve(sys.argv[1], socket=sys.argv[2], batch_size="
                f"{args.batch_size}, threads={args.threads}, prefetch=4, max_length={MAX_LENGTH},"
                " seed=0)")
        server = subprocess.Popen([sys.executable, "-c", code, args.data, sock])
        loader = stoker.Loader(connect=sock)
    elif args.run == "stoker":
        import stoker

        loader = stoker.Loader(args.data, batch_size=args.batch_size, threads=args.threads,
                               prefetch=4, max_length=MAX_LENGTH, seed=0)
    else:
        ds = PyVlmDataset(args.data)
        g = torch.Generator()
        g.manual_seed(0)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                                             generator=g, num_workers=args.workers,
                                             collate_fn=py_collate)
    first, samples, checksum = None, 0, 0
    for b in loader:
        if first is None:
            first = time.perf_counter() - t0
        samples += int(b["input_ids"].shape[0])
        checksum += int(b["attention_mask"].sum())
        del b  # like a trainer: the batch is dropped after its step (served: releases it)
    handoff = loader.stats().get("handoff_us_p50") if args.run != "dataloader" else None
    del loader  # DataLoader workers are joined here, so their CPU is in RUSAGE_CHILDREN
    if server is not None and server.wait(timeout=120) != 0:
        raise SystemExit("stoker.serve failed")
    wall = time.perf_counter() - t0
    cpu = cpu_s() - c0
    peak, procs, pss = rss.total_mb()
    print(json.dumps({"samples": samples, "wall_s": wall, "cpu_s": cpu, "first_s": first,
                      "peak_rss_mb": peak, "peak_pss_mb": pss, "children": procs, "tokens": checksum,
                      "handoff_us_p50": handoff}))


# ---- same outputs ---------------------------------------------------------------------------

def check_parity(data, batch_size, n_batches=2):
    """stoker's first batches vs the Python pipeline on the same sample ids: input_ids (each
    row up to its length), image_grid_thw and pixel_values (all rows, exact)."""
    import torch
    import stoker

    ds = PyVlmDataset(data)
    loader = stoker.Loader(data, batch_size=batch_size, threads=2, max_length=MAX_LENGTH,
                           mode="serial")
    checked = 0
    for k, b in enumerate(loader):
        if k == n_batches:
            break
        items = [ds[int(s)] for s in b["sample_ids"]]
        py = py_collate(items)
        for r, it in enumerate(items):
            n = len(it["input_ids"])
            if int(b["attention_mask"][r].sum()) != n or \
                    not torch.equal(b["input_ids"][r, :n], it["input_ids"]):
                raise SystemExit(f"parity: input_ids differ for sample {it['sample_id']}")
        if not torch.equal(b["image_grid_thw"], py["image_grid_thw"]):
            raise SystemExit("parity: image_grid_thw differ")
        if not torch.equal(b["pixel_values"], py["pixel_values"]):
            d = (b["pixel_values"] - py["pixel_values"]).abs().max()
            raise SystemExit(f"parity: pixel_values differ (max |diff| {float(d):.3g})")
        checked += len(items)
    return checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stoker-bin", default=os.path.join(ROOT, "build", "stoker"))
    ap.add_argument("--python-dir", default=None, help="<build>/python (holds stoker/_stoker)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="records (default 128 quick, 512)")
    ap.add_argument("--max-side", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="stoker CPU threads")
    ap.add_argument("--data", default=None, help="use this JSONL instead of generating one")
    ap.add_argument("--run", choices=["stoker", "served", "dataloader"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.python_dir:
        sys.path.insert(0, args.python_dir)
    if args.run:
        return run_one(args)

    n = args.n or (128 if args.quick else 512)
    max_side = args.max_side or (640 if args.quick else 1280)
    tmp = tempfile.TemporaryDirectory(prefix="stoker-bench-torch-")
    if args.data is None:
        out = os.path.join(tmp.name, "synth")
        subprocess.run([args.stoker_bin, "synth", "--out", out, "--n", str(n), "--seed", "1",
                        "--max-side", str(max_side)], check=True, capture_output=True)
        args.data = os.path.join(out, "data.jsonl")
    print(f"stoker bench torch: {n} synthetic records (max side {max_side} px), batch "
          f"{args.batch_size}; stoker threads={args.threads} vs DataLoader num_workers="
          f"{args.workers}; {os.cpu_count()} CPUs")
    t = time.perf_counter()
    checked = check_parity(args.data, args.batch_size)
    print(f"same outputs: input_ids, image_grid_thw, pixel_values identical on {checked} samples "
          f"({time.perf_counter() - t:.1f} s)")
    print("python path: position_ids (mRoPE) skipped; labels computed (assistant turns), "
          "not compared")

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.python_dir:
        env["PYTHONPATH"] = args.python_dir + os.pathsep + env.get("PYTHONPATH", "")
    res = {}
    for who in ("stoker", "served", "dataloader"):
        cmd = [sys.executable, os.path.abspath(__file__), "--run", who, "--data", args.data,
               "--batch-size", str(args.batch_size), "--workers", str(args.workers),
               "--threads", str(args.threads)]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise SystemExit(f"{who} run failed")
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    s, v, d = res["stoker"], res["served"], res["dataloader"]
    for other, r in (("served", v), ("DataLoader", d)):
        if s["samples"] != r["samples"] or s["tokens"] != r["tokens"]:
            print(f"warning: samples/tokens differ: stoker {s['samples']}/{s['tokens']}, "
                  f"{other} {r['samples']}/{r['tokens']}")
    rows = []
    for name, r in (("stoker (in-process)", s), ("stoker (served, shm)", v),
                    (f"DataLoader(num_workers={args.workers})", d)):
        rows.append((name, r["samples"] / r["wall_s"], r["cpu_s"] / r["samples"] * 1e3,
                     r["peak_rss_mb"], r["first_s"], r["wall_s"], r["peak_pss_mb"]))
    print(f"{'':28} {'samples/s':>10} {'CPU ms/sample':>14} {'peak RSS MB':>12} "
          f"{'peak PSS MB':>12} {'first batch s':>14} {'wall s':>8}")
    for name, sps, cpu, rss, first, wall, pss in rows:
        print(f"{name:28} {sps:10.1f} {cpu:14.2f} {rss:12.0f} {pss:12.0f} {first:14.3f} "
              f"{wall:8.2f}")
    print(f"  (peak RSS sums every process's peak: served = client + server, the shared arena "
          f"counted in both; DataLoader = main + {d['children']} workers, pages shared after fork "
          f"counted in each. Peak PSS = max over 40 ms polls of the summed proportional set "
          f"size, shared pages split)")
    print(f"hand-off p50 (C++ batch ready → dict of torch tensors): in-process "
          f"{s['handoff_us_p50']:.0f} us, served {v['handoff_us_p50']:.0f} us (target <= 100)")
    dl = rows[2]
    for name, row in (("in-process", rows[0]), ("served", rows[1])):
        print(f"stoker {name} / DataLoader: samples/s {row[1] / dl[1]:.2f}x (target >= 3), "
              f"CPU per sample {row[2] / dl[2]:.2f}x, peak RSS {row[3] / dl[3]:.2f}x "
              f"(target <= 0.5), peak PSS {row[6] / dl[6]:.2f}x, time to first batch "
              f"{row[4] / dl[4]:.2f}x")
    print(f"ratio: {rows[0][1] / dl[1]:.2f}")


if __name__ == "__main__":
    main()
