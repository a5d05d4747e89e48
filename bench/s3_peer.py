#!/usr/bin/python3
"""The peer of `stoker bench s3`: boto3 (Debian's python3-boto3) with a ThreadPoolExecutor,
as users write a parallel S3 fetch in Python.

usage: /usr/bin/python3 bench/s3_peer.py --endpoint http://127.0.0.1:PORT --bucket B
           --expected DIR --count N --workers W --warmup K --passes P

One boto3 client (thread-safe, shared by the threads) with max_pool_connections = W, so every
thread keeps its own connection alive (botocore's default pool of 10 would make the other
threads open and close connections). Each run fetches `count` objects obj/<i mod n> with
`executor.map(get, keys)` — get_object(...)["Body"].read() — and compares every body with the
uploaded bytes (DIR/<i>, read before timing) as the results arrive. Runs: K untimed, then P
timed; run r starts at key (7 + 31 r) mod n, as stoker's side does. Prints one JSON object: the
best wall time, this process's CPU time (all threads) of that run, objects, bytes checked.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import sys
import time


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", default="bench")
    ap.add_argument("--expected", required=True, help="folder with the uploaded objects 0..n-1")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()

    import boto3
    import botocore
    from botocore.config import Config

    n = len(os.listdir(args.expected))
    expected = [open(os.path.join(args.expected, str(i)), "rb").read() for i in range(n)]
    client = boto3.session.Session().client(
        "s3", endpoint_url=args.endpoint, region_name="us-east-1",
        aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
        config=Config(max_pool_connections=args.workers, s3={"addressing_style": "path"},
                      retries={"max_attempts": 3, "mode": "standard"}))

    def get(key: str) -> bytes:
        return client.get_object(Bucket=args.bucket, Key=key)["Body"].read()

    best = None
    checked = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        for run in range(args.warmup + args.passes):
            first = (7 + 31 * run) % n
            index = [(first + i) % n for i in range(args.count)]
            c0, t0 = cpu_s(), time.perf_counter()
            for k, body in zip(index, pool.map(get, [f"obj/{k}" for k in index])):
                if body != expected[k]:
                    print(f"object obj/{k} came back with different bytes", file=sys.stderr)
                    return 1
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            checked += args.count
            if run >= args.warmup and (best is None or wall < best[0]):
                best = (wall, cpu)
    print(json.dumps({"peer": f"boto3 {boto3.__version__} (botocore {botocore.__version__}) + "
                              f"ThreadPoolExecutor({args.workers})",
                      "objects": args.count, "wall_s": best[0], "cpu_s": best[1],
                      "checked": checked}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
