#!/usr/bin/python3
"""The peer of `stoker bench s3`: boto3 (Debian's python3-boto3) with a ThreadPoolExecutor,
as users write a parallel S3 fetch in Python.

usage: /usr/bin/python3 bench/s3_peer.py --endpoint http://127.0.0.1:PORT --bucket B
           --prefix SET --pattern FILE --n N --size BYTES --count C --workers W
           --warmup K --passes P [--server-groups G1,G2,... --s3rver-groups S]

One boto3 client (thread-safe, shared by the threads) with max_pool_connections = W, so every
thread keeps its own connection alive (botocore's default pool of 10 would make the other
threads open and close connections). Object i of the set is SIZE bytes of the pattern file from
offset (i * 4099) % 65536 (the bench uploaded exactly that). Each run fetches `count` objects
SET/<i mod n> with `executor.map(get, keys)` — get_object(...)["Body"].read() — and compares
every body with its expected bytes as the results arrive. Runs: K untimed, then P timed; run r
starts at key (7 + 31 r) mod n, as stoker's side does. Around each timed run it reads the CPU
of the servers' process groups (the first S groups are s3rver processes, the rest nginx) and
the machine's idle time. Prints one JSON object: the best wall time, this process's CPU time
(all threads) of that run, objects, bodies checked, and the most the servers used in any timed
run.
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


TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(groups):
    """{pid: (group index, CPU s)} of every live process in the given process groups."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pgrp = int(fields[2])
        if pgrp in groups:
            out[int(name)] = (groups.index(pgrp), (int(fields[11]) + int(fields[12])) / TICK)
    return out


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[3] + v[4]) / TICK, sum(v) / TICK


def server_use(before, after, wall, s3rver_groups):
    busiest = s3 = ngx = 0.0
    for pid, (g, cpu) in after[0].items():
        d = (cpu - before[0].get(pid, (g, 0.0))[1]) / wall
        if g < s3rver_groups:
            s3 += d
            busiest = max(busiest, d)
        else:
            ngx += d
    total = after[2] - before[2]
    idle = (after[1] - before[1]) / total if total > 0 else 0.0
    return busiest, s3, ngx, idle


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", default="bench")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--pattern", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--server-groups", default="")
    ap.add_argument("--s3rver-groups", type=int, default=0)
    args = ap.parse_args()

    import boto3
    import botocore
    from botocore.config import Config

    with open(args.pattern, "rb") as f:
        pattern = f.read()
    groups = [int(g) for g in args.server_groups.split(",") if g]
    n, size = args.n, args.size

    def expected(k: int) -> bytes:
        s = (k * 4099) % 65536
        return pattern[s:s + size]

    client = boto3.session.Session().client(
        "s3", endpoint_url=args.endpoint, region_name="us-east-1",
        aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
        config=Config(max_pool_connections=args.workers, s3={"addressing_style": "path"},
                      retries={"max_attempts": 3, "mode": "standard"}))

    def get(key: str) -> bytes:
        return client.get_object(Bucket=args.bucket, Key=key)["Body"].read()

    best = None
    worst = [0.0, 0.0, 0.0, None]  # busiest s3rver, s3rvers, nginx, machine idle (min)
    checked = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        for run in range(args.warmup + args.passes):
            first = (7 + 31 * run) % n
            index = [(first + i) % n for i in range(args.count)]
            before = (group_cpu(groups), *machine())
            c0, t0 = cpu_s(), time.perf_counter()
            for k, body in zip(index, pool.map(get, [f"{args.prefix}/{k}" for k in index])):
                if body != expected(k):
                    print(f"object {args.prefix}/{k} came back with different bytes",
                          file=sys.stderr)
                    return 1
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            after = (group_cpu(groups), *machine())
            checked += args.count
            if run < args.warmup:
                continue
            b, s3, ngx, idle = server_use(before, after, wall, args.s3rver_groups)
            worst = [max(worst[0], b), max(worst[1], s3), max(worst[2], ngx),
                     idle if worst[3] is None else min(worst[3], idle)]
            if best is None or wall < best[0]:
                best = (wall, cpu)
    print(json.dumps({"peer": f"boto3 {boto3.__version__} (botocore {botocore.__version__}) + "
                              f"ThreadPoolExecutor({args.workers})",
                      "objects": args.count, "wall_s": best[0], "cpu_s": best[1],
                      "checked": checked, "servers_busiest": worst[0], "servers_s3rver": worst[1],
                      "servers_nginx": worst[2], "machine_idle": worst[3] or 0.0}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
