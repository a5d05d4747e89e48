"""Where the Loader's CPU per image goes, finish="cpu" vs finish="device" (a developer tool beside
`stoker bench finish`; needs Linux `perf`): the bench's Loader configuration (threads 2, prefetch
4, batch 8, max_length 32768), its consumer idle (next() and the release only), one untimed
warm-up epoch, then `perf record -p` over the timed epochs. Each side's CPU per image (the
process's rusage over the timed epochs ÷ images) is split by perf's samples into: decode
(libjpeg / libturbojpeg / libpng / libz / libwebp), resize (the bicubic kernels), normalise +
patchify (the float rows; finish=device: none — the resize writes the uint8 pixels in place), kernel, other (tokenizer,
template, batch assembly, Python, malloc, ...).

  /usr/bin/python3 bench/finish_profile.py --python-dir build/python --data D.jsonl [--epochs N]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

CATEGORIES = ("decode", "resize", "normalise+patchify", "kernel", "other")
DECODE_DSOS = ("libjpeg", "libturbojpeg", "libpng", "libz.", "libwebp", "libsharpyuv")
RESIZE_SYMS = ("HorizontalFixed", "VerticalFixed", "InterleaveRows", "resize_bicubic",
               "Horizontal", "Vertical", "resample")
PIXEL_SYMS = ("write_bands", "Normalize", "StreamCopy", "stream_copy", "patchify")


def category(dso, sym):
    if any(k in dso for k in DECODE_DSOS):
        return "decode"
    if dso.startswith("[kernel"):
        return "kernel"
    if any(k in sym for k in RESIZE_SYMS):
        return "resize"
    if any(k in sym for k in PIXEL_SYMS):
        return "normalise+patchify"
    return "other"


def run_child(args):
    """The Loader, consumer idle; READY (our pid) into args.ready after the warm-up epoch."""
    import torch

    import stoker

    torch.set_num_threads(1)
    loader = stoker.Loader(args.data, batch_size=8, threads=2, prefetch=4, max_length=32768,
                           seed=0, epochs=args.epochs + 2, finish=args.child)
    for b in loader:
        del b
    with open(args.ready, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(0.5)  # perf attaches
    r0, images = resource.getrusage(resource.RUSAGE_SELF), 0
    for _ in range(args.epochs):
        for b in loader:
            g = b.get("image_grid_thw")
            images += 0 if g is None else int(g.shape[0])
            del b
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    print(f"{1e3 * cpu / max(1, images):.4f} {images}")


def profile(args, finish, tmp):
    ready = os.path.join(tmp, f"ready.{finish}")
    data = os.path.join(tmp, f"perf.{finish}")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", finish,
                              "--ready", ready, "--data", args.data, "--epochs", str(args.epochs)]
                             + (["--python-dir", args.python_dir] if args.python_dir else []),
                             stdout=subprocess.PIPE, text=True, env=env)
    while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
        if child.poll() is not None:
            raise SystemExit(f"finish={finish}: the Loader exited before its warm-up ended")
        time.sleep(0.1)
    with open(ready) as f:
        pid = f.read().strip()
    perf = subprocess.Popen(["perf", "record", "-q", "-F", "2000", "-o", data, "-p", pid],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = child.communicate()
    perf.wait()
    ms, images = out.split()
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym",
                             "-g", "none", "--stdio", "--field-separator", "|"],
                            capture_output=True, text=True, check=True).stdout
    share = dict.fromkeys(CATEGORIES, 0.0)
    for line in report.splitlines():
        parts = line.split("|")
        if line.startswith("#") or len(parts) < 3 or not parts[0].strip().endswith("%"):
            continue
        share[category(parts[1].strip(), parts[2])] += float(parts[0].strip().rstrip("%"))
    total = sum(share.values()) or 1.0
    ms = float(ms)
    print(f"finish={finish:6} {ms:6.2f} ms CPU per image ({images} images): " + ", ".join(
        f"{k} {ms * v / total:.2f} ms ({100 * v / total:.0f}%)" for k, v in share.items()))
    sys.stdout.flush()
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--python-dir", default=None, help="<build>/python")
    ap.add_argument("--epochs", type=int, default=4, help="timed epochs (4)")
    ap.add_argument("--child", choices=["cpu", "device"], help=argparse.SUPPRESS)
    ap.add_argument("--ready", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.python_dir:
        sys.path.insert(0, args.python_dir)
    if args.child:
        return run_child(args)
    with tempfile.TemporaryDirectory(prefix="stoker-finish-profile-") as tmp:
        cpu, dev = (profile(args, f, tmp) for f in ("cpu", "device"))
    print(f"ratio (consumer idle): {cpu / dev:.2f}")


if __name__ == "__main__":
    main()
