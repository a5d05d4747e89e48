#!/usr/bin/python3
"""The peer of `stoker bench video`: the video path a user runs today without stoker —
qwen-vl-utils 0.0.14's fetch_video on its torchvision backend (torchvision 0.14 `read_video` on
PyAV 10: every frame of the clip decoded and converted to RGB, then the sampled frames resized
with torchvision's antialiased bicubic), then the transformers video processor (fused
rescale+normalise, temporal patching) — video_reference.py beside this file.

usage: /usr/bin/python3 bench/video_peer.py --model qwen2.5-vl --warmup W --passes P
           --list FILES.txt --dump-dir DIR

Runs pinned to the core the caller pinned it to, torch at one thread. W untimed passes, then P
timed ones over the files; each video's work is timed with time.process_time() (all threads of
the process: PyAV's FFmpeg threads count too). After each video of the first timed pass,
untimed, its decoded RGB frames (before resize) and its resized uint8 frames are written to
DIR/<k>.raw and DIR/<k>.frames so stoker can compare them. Prints one JSON object: per pass the
CPU and wall seconds, per video the frame indices, grid, clip frame count.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch  # noqa: E402

import video_reference as ref  # noqa: E402

MODELS = {"qwen2-vl": "qwen2vl", "qwen2.5-vl": "qwen25vl", "qwen3-vl": "qwen3vl"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-vl")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--list", required=True)
    ap.add_argument("--dump-dir", required=True)
    ap.add_argument("--fps", type=float, default=2.0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = MODELS[a.model]
    patch = ref.MODELS[model][0]
    files = [l for l in pathlib.Path(a.list).read_text().splitlines() if l]
    dump = pathlib.Path(a.dump_dir)

    def one(path):
        resized, raw, meta, sample_fps = ref.fetch_video(dict(video=path, fps=a.fps), image_patch_size=patch)
        pixels, grid = ref.video_processor(resized, model)
        return resized, raw, meta, grid, pixels

    for _ in range(a.warmup):
        for f in files:
            one(f)
    passes = []
    videos = []
    for p in range(a.passes):
        cpu = wall = 0.0
        for k, f in enumerate(files):
            c0, w0 = time.process_time(), time.perf_counter()
            resized, raw, meta, grid, _pixels = one(f)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            if p == 0:
                raw.permute(0, 2, 3, 1).contiguous().numpy().tofile(dump / f"{k}.raw")
                resized.permute(0, 2, 3, 1).contiguous().numpy().tofile(dump / f"{k}.frames")
                videos.append(dict(indices=meta["frames_indices"], grid=grid,
                                   total_frames=meta["total_num_frames"],
                                   height=int(resized.shape[2]), width=int(resized.shape[3])))
            del resized, raw, _pixels
        passes.append(dict(cpu_s=cpu, wall_s=wall))
    print(json.dumps(dict(passes=passes, videos=videos, versions=ref.VERSIONS)))


if __name__ == "__main__":
    main()
