// How the engine runs and what it does about bad data: the mode (how far production runs
// ahead of the consumer), padding and batching (fixed batches, packs, token budgets), the
// error policy (strict, failure budgets, the report) and BatchOptions, what a batch looks like
// (the LoaderConfig's fields the engine reads too: EngineOptions derives from it, nothing is
// copied by hand). Plain values, part of LoaderConfig (loader_config.h).
#pragma once

#include <cstdint>
#include <string>

#include "stoker/batch/pack_collate.h"
#include "stoker/image/processor.h"

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

// Where media rows are finished (rescale, normalise, temporal copies): here (kCpu: the batch
// holds pixel_values) or on the trainer's device (kDevice: the batch holds each medium's resized
// uint8 pixels as the resize wrote them plus the value table; stoker.finish patchifies and builds
// pixel_values there — issue 26).
enum class Finish { kCpu, kDevice };

// What a batch looks like and when the run stops: the Loader's fields the engine reads too.
struct BatchOptions {
  int batch_size = 8;
  std::int64_t max_length = 8192;
  Padding padding = Padding::kLongest;
  image::PixelDType pixel_dtype = image::PixelDType::kFloat32;  // finished rows (and the table)
  Finish finish = Finish::kCpu;
  PackingOptions packing;
  ErrorPolicy errors;

  // Megatron form: packing.align; the HF form pads nothing (1).
  std::int64_t pack_align() const {
    return packing.format == batch::PackFormat::kMegatron ? packing.align : 1;
  }
  // The dtype media rows are written in: the pixel dtype, or kUInt8 when the device finishes.
  image::PixelDType rows_dtype() const {
    return finish == Finish::kDevice ? image::PixelDType::kUInt8 : pixel_dtype;
  }
  // The row / batch token budget: max_tokens, else max_length.
  std::int64_t pack_capacity() const { return packing.max_tokens > 0 ? packing.max_tokens : max_length; }
};

}  // namespace stoker::pipeline
