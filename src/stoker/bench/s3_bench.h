// `stoker bench s3`: object fetch throughput from a real S3 server (npm @20minutes/s3rver,
// SigV4-checked; several processes on one store, so no single node process is the ceiling)
// behind a real delaying proxy (nginx + lua `ngx.sleep` before proxy_pass: each request delayed
// without blocking the others), at 50 and 200 ms added per request — the first-byte latency of
// real S3 that loopback lacks — for two sets: many small objects and a few large ones. stoker
// (io::ObjectStore, the io module's default concurrency) against boto3 + a ThreadPoolExecutor
// (bench/s3_peer.py), the same objects through the same proxy, the same warm-up and runs; every
// object's bytes are checked on both sides; the servers' CPU in every timed run is printed, so a
// run where they, not the clients, were the limit is visible (and flagged). Servers run on
// 127.0.0.1 from a temp dir and are killed on every exit path.
// Errors: Unavailable (servers), those of the peer; kSkipped when node/s3rver/nginx/boto3 are
// missing.
#pragma once

#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

struct S3BenchOptions {
  bool quick = false;
  int size_kb = 16;                  // small objects
  int small_objects = 0;             // 0: 2,000 quick, 10,000
  int per_run = 0;                   // small objects fetched per run; 0: 1,000 quick, 2,000
  int large_mb = 8;
  int large_objects = 0;             // 0: 24 quick, 100 (each run fetches all); < 0: none
  int s3rvers = 4;                   // s3rver processes behind the proxy
  int concurrency = 0;               // stoker's requests in flight; 0: the io default (256)
  std::vector<int> peer_workers;     // boto3 thread counts tried; empty: {16, 64}; best = peer
  std::vector<int> delays_ms;        // empty: {50, 200}
  std::string python = "/usr/bin/python3";
  Repeat repeat{.warmup = 1, .passes = 0};  // passes 0: 2 quick, 3 otherwise
};

Result<Outcome> run_s3_bench(const S3BenchOptions& options);

}  // namespace stoker::bench
