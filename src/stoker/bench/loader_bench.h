// `stoker bench loader`: what the production path costs per image — the pipeline::Loader with no
// trainer (every batch taken and dropped at once) on an image-heavy set (photo-like 1920×1080
// JPEGs, one per record) — against the same images through image::ImageProcessor::process()
// alone on one core. Two Loader runs on the same images, a 100-record manifest and the whole
// set, give the first 100 samples' CPU per image (start-up included) and the steady state as the
// marginal cost ((CPU(N) − CPU(100)) / (N − 100): start-up cancels). Loader CPU = every thread of
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
  int images = 0;         // records = images; 0: 200 quick, 600
  std::string size = "1920x1080";
  int threads = 0;        // Loader CPU pool; 0: the CPUs this process may use
  int batch_size = 8;
  int prefetch = 4;
  int core = -1;          // process() alone: this CPU (-1: the last allowed)
  std::string dir;        // keep the generated set here (default: temp, removed)
};

Result<Outcome> run_loader_bench(const LoaderBenchOptions& options);

}  // namespace stoker::bench
