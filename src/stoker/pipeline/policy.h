// How the engine runs and what it does about bad data: the mode (how far production runs
// ahead of the consumer), padding and batching (fixed batches, packs, token budgets) and the
// error policy (strict, failure budgets, the report). Plain values, part of LoaderConfig.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/batch/pack_collate.h"

namespace stoker::pipeline {

// The seed's ladder (DESIGN.md; `stoker bench ladder`): how much of the engine runs ahead.
enum class Mode {
  kSerial,      // on demand in next(): one sample after another, on the caller's thread
  kConcurrent,  // on demand in next(): the batch's samples fetched/transformed in parallel
  kPrefetch,    // background producers keep `prefetch` batches ready (the default)
};

enum class Padding { kLongest, kFixed };

// How samples become batches. kFixed: batch_size samples, padded. kPack: whole samples packed
// into one row of at most max_tokens tokens (best-fit decreasing within a window; the HF varlen
// or Megatron THD form, batch/pack_collate.h). kTokenBudget: padded batches whose batch size
// is chosen so that size × longest ≤ max_tokens (for trainers that cannot take varlen).
// kPack and kTokenBudget plan globally: every rank computes the same plan and takes its share
// of each step, balanced by vision load (pipeline/README.md "Packing").
enum class Batching { kFixed, kPack, kTokenBudget };

struct PackingOptions {
  Batching batching = Batching::kFixed;
  std::int64_t max_tokens = 0;   // row / batch token budget; 0: max_length
  int window = 1000;             // samples planned together (a window of the epoch order)
  batch::PackFormat format = batch::PackFormat::kHF;
  int position_rows = 4;         // HF form: 4 (text row + mRoPE, transformers >= 4.54) or 3
                                 // (models with 1-D positions: 1, whatever is asked)
  std::int64_t align = 1;        // Megatron form: each sub-sequence padded to a multiple of it
                                 // (e.g. 2·CP, or lcm(2·CP, CP·TP) with sequence parallelism)
};

struct ErrorPolicy {
  bool strict = false;             // stop at the first failed sample
  std::int64_t max_errors = -1;    // stop when more samples than this failed (-1: no limit)
  double max_error_rate = 0.10;    // stop when failed/seen exceeds this after min_seen samples
  std::int64_t min_seen = 100;
  std::string report_path;         // JSONL error report; empty: none written
};

}  // namespace stoker::pipeline
