#!/usr/bin/python3
"""The peer of `stoker bench sources`: what a Python user runs instead — a WebDataset-style reader
on Python's tarfile (shards streamed front to back: `tarfile.open(mode="r|")` over a file or an
HTTP response, members grouped by key = the name up to the first dot of its last component,
adjacent members only, as webdataset's tariterators do), or a JSONL reader that opens each
image file (or GETs its URL), then the Hugging Face Qwen2-VL *slow* image processor path
(hf_image_reference.py beside this file: Pillow decode + EXIF transpose + RGB, smart_resize,
BICUBIC, rescale/normalise, patchify) for every image of every sample.
Workers as a DataLoader has them: W processes forked per pass (split_by_worker: worker i takes
shards i, i+W, ...; JSONL: records i, i+W, ...), samples handed to the parent through a queue.

usage: sources_peer.py --form wds|jsonl --data SPEC [--data SPEC ...] --model qwen2-vl
           --workers 2 --warmup W --passes P --batch 8

Each pass: wall time, CPU (parent + the workers: RUSAGE_CHILDREN after they are joined), time
until the first `batch` samples reached the parent, samples and images. The output per image —
(rows, crc32 of its float32 pixel_values) — is collected untimed in the workers and compared by
stoker on every timed pass (sorted, since the orders differ). Prints one JSON object.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import pathlib  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import hf_image_reference as ref  # noqa: E402


def open_stream(spec: str):
    if spec.startswith("http://") or spec.startswith("https://"):
        return urllib.request.urlopen(spec, timeout=120)
    return open(spec, "rb")


def read_bytes(spec: str) -> bytes:
    with open_stream(spec) as f:
        return f.read()


def wds_samples(shard: str):
    """webdataset's tar_file_expander + group_by_keys on one shard."""
    with open_stream(shard) as stream:
        with tarfile.open(fileobj=stream, mode="r|") as t:
            key, sample = None, None
            for m in t:
                if not m.isfile():
                    continue
                last = m.name.rsplit("/", 1)
                base = last[-1]
                if "." not in base[1:]:
                    continue
                dot = base.index(".", 1) if base.startswith(".") else base.index(".")
                k = (last[0] + "/" if len(last) == 2 else "") + base[:dot]
                part = base[dot + 1:]
                data = t.extractfile(m).read()
                if k != key:
                    if sample is not None:
                        yield sample
                    key, sample = k, {"__key__": k}
                sample[part] = data
            if sample is not None:
                yield sample


def image_refs(record) -> list:
    """The image references of an OpenAI-messages record, in order."""
    out = []
    for msg in record.get("messages", []):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for p in content:
            if isinstance(p, dict) and p.get("type") == "image":
                out.append(p.get("image") or p.get("url") or p.get("path"))
    return out


def process(data: bytes, spec) -> str:
    img = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    if img.mode != "RGB":
        img = img.convert("RGB")
    rgb = np.asarray(img, dtype=np.uint8)
    pv = ref.process_rgb(rgb, spec).pixel_values
    return f"{pv.shape[0]}:{zlib.crc32(np.ascontiguousarray(pv, dtype=np.float32).tobytes())}"


def worker(form, data, w, workers, spec, q):
    try:
        if form == "wds":
            for shard in data[w::workers]:
                for s in wds_samples(shard):
                    rec = json.loads(s.get("json") or next(v for k, v in s.items() if k.endswith("json")))
                    digests = [process(s[r], spec) for r in image_refs(rec)]
                    q.put(digests)
        else:
            base = data[0].rsplit("/", 1)[0]
            lines = [ln for ln in read_bytes(data[0]).decode().splitlines() if ln.strip()]
            for line in lines[w::workers]:
                rec = json.loads(line)
                digests = [process(read_bytes(base + "/" + r), spec) for r in image_refs(rec)]
                q.put(digests)
    except Exception as e:  # noqa: BLE001
        q.put({"error": repr(e)})
    q.put(None)


def one_pass(form, data, workers, spec, batch):
    q = mp.Queue(maxsize=64)
    t0 = time.perf_counter()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [mp.Process(target=worker, args=(form, data, w, workers, spec, q)) for w in range(workers)]
    for p in procs:
        p.start()
    done, samples, first, digests = 0, 0, None, []
    while done < workers:
        item = q.get()
        if item is None:
            done += 1
            continue
        if isinstance(item, dict):
            raise RuntimeError(item["error"])
        samples += 1
        digests += item
        if samples == batch and first is None:
            first = time.perf_counter() - t0
    for p in procs:
        p.join()
    wall = time.perf_counter() - t0
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime +
           kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "first_s": first if first is not None else wall,
            "samples": samples, "images": len(digests), "digests": sorted(digests)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--form", choices=["wds", "jsonl"], required=True)
    ap.add_argument("--data", action="append", required=True)
    ap.add_argument("--model", default="qwen2-vl")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    mp.set_start_method("fork")
    spec = ref.MODELS[a.model]
    passes = []
    for i in range(a.warmup + a.passes):
        r = one_pass(a.form, a.data, a.workers, spec, a.batch)
        if i >= a.warmup:
            passes.append(r)
    print(json.dumps({"passes": passes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
