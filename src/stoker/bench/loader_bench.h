// `stoker bench loader`: what the production path costs per image — the pipeline::Loader with no
// trainer (every batch taken and dropped at once) on an image-heavy set (photo-like 1920×1080
// JPEGs, one per record) — against the same images through image::ImageProcessor::process()
// alone on one core. One Loader run (the process's first: a cold start) is read twice: its CPU
// until the consumer has the first 100 samples (start-up included), and between sample 100 and
// sample N − 2·window (the steady state: as much work runs ahead of delivery at both reads, so it
// cancels). Loader CPU = every thread of
// this process but the consumer's (its pools by name: /proc/self/task). Also peak RSS per sample
// in flight and the limiter (saturated cores, or the busiest stage). Every delivered sample's
// pixel_values are checked against process()'s output for its image (CRC-32 of every 4th row).
// Last line: `loader/process: N` (steady-state CPU per image, Loader ÷ process() alone).
// Uses only the Loader's public API (loader.h), so it keeps working when its internals change.
// Blocking. Errors: synth's, the Loader's, the image processor's.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

struct LoaderBenchOptions {
  bool quick = false;
  std::string model = "qwen2.5-vl";
  std::string tokenizer;  // empty: the model's (a preset's bundled Qwen tokenizer)
  int images = 0;         // records = images; 0: 400 quick, 800 (≥ 200 + 2 windows)
  std::string size = "1920x1080";
  int threads = 0;        // Loader CPU pool; 0: the CPUs this process may use
  int batch_size = 8;
  int prefetch = 4;
  int core = -1;          // process() alone: this CPU (-1: the last allowed)
  std::string dir;        // keep the generated set here (default: temp, removed)
};

Result<Outcome> run_loader_bench(const LoaderBenchOptions& options);

}  // namespace stoker::bench
