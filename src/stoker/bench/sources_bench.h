// `stoker bench sources [--quick]` (issue 23): the same synth set as JSONL + image files, as
// WebDataset shards and as an Energon folder, read by stoker's Loader — locally and over HTTP
// through nginx adding a delay per request (the s3 bench's delaying proxy, serving the files) —
// against a Python peer (bench/sources_peer.py: a tarfile-based WebDataset-style reader or a
// JSONL reader, + the HF slow image processor, in DataLoader-like worker processes). Every timed
// pass of both sides is compared: the sorted (rows, CRC-32 of pixel_values) of every image.
// Prints samples/s, time to first batch, CPU ms per sample, then `ratio: N` = stoker's local
// WebDataset shards ÷ the peer's local shards (samples/s).
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

struct SourcesBenchOptions {
  bool quick = false;
  int records = 0;        // 0: 64 quick, 256
  int shards = 4;
  int max_side = 0;       // 0: 384 quick, 768
  int delay_ms = 50;      // per request through nginx; < 0: no remote rows
  int threads = 2;        // stoker's CPU threads and the peer's workers
  std::string python = "/usr/bin/python3";
  Repeat repeat{.warmup = 1, .passes = 0};  // passes 0: 2 quick, 3
};

Result<Outcome> run_sources_bench(const SourcesBenchOptions& options);

}  // namespace stoker::bench
