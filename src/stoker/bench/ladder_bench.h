// `stoker bench ladder`: the seed's ladder in one command. The same dataset feeds a simulated GPU
// trainer (it sleeps step_ms per batch: a GPU-bound step leaves the CPU free) in four modes —
// serial (Loader kSerial), concurrent (kConcurrent), prefetch (kPrefetch), zero-copy (kPrefetch
// here + shm::BatchServer; the trainer is a separate `stoker consume` process reading the arena
// in place). First a warm-up run without a trainer measures the pipeline's per-batch production
// time; the step is 1.25× that unless step_ms is given, so a loader that overlaps production
// with the step hides it entirely and one that does not shows it as wait. Per mode: steady-state
// wait ratio (the first batch excluded), samples/s, time to first batch, next() p50/p99, peak RSS.
// Writes ladder.csv (mode,step,wait_ms,step_ms) and ladder.png (bench/plot_ladder.py) to `out`.
// Here stoker's modes are each other's peers (bench/LADDER.md). Blocking. Errors: the Loader's,
// the BatchServer's, the consumer process's.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/base/result.h"
#include "stoker/exec/sched.h"
#include "stoker/model/family.h"

namespace stoker::bench {

inline constexpr char kLadderHelp[] = R"(usage: stoker bench ladder [options]

Runs one dataset against a simulated GPU trainer in five modes: serial, concurrent, prefetch,
zero-copy (prefetch in this process, trainer in a separate process fed through shared memory),
finish=device (prefetch whose batches hold resized uint8 pixels for the trainer's device to finish).

options:
  --quick             small synthetic set, steps sized to finish in well under 45 s
  --data PATH         a JSONL manifest or a folder holding data.jsonl (default: synthetic, temp);
                      s3://bucket/key.jsonl or http(s)://… read the set from object storage
                      (AWS env / ~/.aws; with added latency: tests/io/s3_ladder.py --latency-ms)
  --model M           model preset or HF folder (default qwen2.5-vl)
  --tokenizer DIR     folder with tokenizer.json (default: the model folder; for a preset, the
                      bundled Qwen tokenizer under tools/oracles, as stoker run)
  --batch-size B      samples per batch (default 4 with --quick, 8 otherwise)
  --step-ms MS        simulated GPU time per step (default: 1.25 x measured production time)
  --steps N           steps per mode (default: sized from the production time)
  --threads T         CPU pool threads (default: the CPUs this process may use)
  --prefetch K        ready batches kept ahead in prefetch modes (default 4)
  --worker-sched C    scheduling class of the loader's threads: batch (default), idle, normal
  --modes LIST        comma-separated subset of serial,concurrent,prefetch,zero-copy,
                      finish-device (prefetch with uint8 pixels for the trainer's device; then also
                      the torch time of stoker.finish per batch on this CPU) (default all)
  --out DIR           ladder.csv, ladder.png (default ./ladder-out)
)";

struct LadderOptions {
  bool quick = false;
  std::string data, model{model::kDefaultModel}, tokenizer, out = "ladder-out";
  std::string modes = "serial,concurrent,prefetch,zero-copy,finish-device";
  int batch_size = 0, steps = 0, threads = 0, prefetch = 4;  // 0: sized by the benchmark
  std::uint64_t arena_bytes = std::uint64_t{1} << 30;  // sized from the warm-up's largest batch
  double step_ms = -1;                                  // -1: 1.25 × production
  exec::SchedClass worker_sched = exec::SchedClass::kBatch;
};

Status run_ladder_bench(const LadderOptions& options);

}  // namespace stoker::bench
