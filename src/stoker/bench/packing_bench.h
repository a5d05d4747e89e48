// `stoker bench packing`: what each way of batching costs a trainer on the synth mix — padded
// batches of B samples (the baseline), token-budget batches (padded, B chosen per batch) and
// packing (best-fit decreasing into rows of L tokens) at L = 4096, 8192, 16384 — as real tokens ÷
// computed tokens, rows per epoch and the data-parallel balance of vision patches and tokens
// over `world` ranks (Σ max / Σ mean over steps, and the per-step spread). Lengths are the
// engine's own (pipeline::measure_records: image headers + tokenizer, nothing decoded) for a
// generated synth set (or --data), in a seeded epoch order (or, with `samples`, drawn with
// replacement); plans are batch::plan_units, the code the Loader runs, and every scheme is
// checked to deliver each kept sample once per epoch.
// Last line: `efficiency: N%` (packing at 8192). Blocking. Errors: synth's, the Loader's.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"
#include "stoker/model/family.h"

namespace stoker::bench {

struct PackingBenchOptions {
  bool quick = false;
  std::string data;        // a manifest to measure instead of a generated synth set
  int records = 0;         // synth records measured; 0: 1000 quick, 4000
  int samples = 0;         // > 0: an epoch of this many drawn with replacement; 0: the records
  int world = 8;           // data-parallel ranks
  int window = 1000;       // samples planned together
  int batch_size = 8;      // the padded baseline's B
  std::string model{model::kDefaultModel};
  std::string tokenizer;   // empty: the model's
  std::uint64_t seed = 0;
  int threads = 0;         // measuring; 0: the CPUs this process may use
  std::string dir;         // keep the generated set here (default: temp, removed)
};

Result<Outcome> run_packing_bench(const PackingBenchOptions& options);

}  // namespace stoker::bench
