// `stoker bench loader`: what the production path costs per image — the pipeline::Loader with no
// trainer (every batch taken and dropped at once) on an image-heavy set (photo-like 1920×1080
// JPEGs, one per record) — against the same images through image::ImageProcessor::process()
// alone. R rounds, each: one Loader run, then process() on one pinned core (nothing else
// running), then process() on the Loader's thread count handing every image to the same consumer
// the Loader's batches go to (same cores, same memory traffic, none of the Loader's machinery).
// A Loader run is read twice: its CPU until the consumer has the first 100 samples (start-up
// included; round 1 is the process's cold start), and between sample 100 and sample
// N − 2·window (the steady state: as much work runs ahead of delivery at both reads, so it
// cancels). Loader CPU = every thread of this process but the consumer's (its pools by name:
// /proc/self/task). Medians over the rounds. Also peak RSS per sample in flight and the limiter
// (saturated cores, or the busiest stage). Every output of every round — Loader and both
// process() passes — is checked against process()'s for its image (CRC-32 of every 4th row).
// Last line: `loader/process: N` (steady-state CPU per image, Loader ÷ process() on the Loader's
// thread count; the one-core ratio is printed beside it).
// Uses only the Loader's public API (loader.h), so it keeps working when its internals change.
// Blocking. Errors: synth's, the Loader's, the image processor's.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"
#include "stoker/model/family.h"

namespace stoker::bench {

struct LoaderBenchOptions {
  bool quick = false;
  std::string model{model::kDefaultModel};
  std::string tokenizer;  // empty: the model's (a preset's bundled Qwen tokenizer)
  int images = 0;         // records = images; 0: 400 quick, 800 (≥ 200 + 2 windows)
  std::string size = "1920x1080";
  int threads = 0;        // Loader CPU pool; 0: the CPUs this process may use
  int batch_size = 8;
  int prefetch = 4;
  int core = -1;          // process() on one core: this CPU (-1: the last allowed)
  int rounds = 0;         // 0: 3 quick, 5
  std::string dir;        // keep the generated set here (default: temp, removed)
};

Result<Outcome> run_loader_bench(const LoaderBenchOptions& options);

}  // namespace stoker::bench
