// Loader: the engine's top. Streams ready training batches for one rank from a record source
// (JSONL manifests today): plan (seeded per-epoch order, this rank's share) → read the record →
// fetch its media (I/O pool, byte budget) → prepare on the CPU pool (parse, validate, plan every
// medium from its header, render + tokenize + labels + positions: what can fail before decoding)
// → emit (every medium decoded, resized, normalised and patchified straight into the batch's
// arena block; one that fails there fails its sample) → assemble → a prefetch ring of `prefetch`
// ready batches. Completion is out of order; delivery is in sample order, so bytes never depend
// on thread count or timing. A failed sample is skipped, counted, reported (JSONL) and replaced
// by the next one, deterministically; past the failure budget (or at the first error with
// `strict`) next() returns the error. A producer error reaches the consumer at its next call.
// next() is for one consumer thread; stats() and state() are thread-safe. A Batch may outlive
// its Loader (it keeps the arena alive). The concepts it hands out have their own headers:
// LoaderConfig (loader_config.h), LoaderState (state.h), LoaderStats (stats.h), Batch
// (batch.h), Mode / Batching / ErrorPolicy / BatchOptions (policy.h). Errors: InvalidArgument
// (config), NotFound (data, tokenizer), DataLoss / ResourceExhausted (failure budget exceeded,
// naming the last failed sample), Cancelled. See pipeline/README.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/batch/arena.h"
#include "stoker/dataset/order.h"
#include "stoker/pipeline/batch.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/pipeline/loader_config.h"
#include "stoker/pipeline/policy.h"
#include "stoker/pipeline/state.h"
#include "stoker/pipeline/stats.h"

namespace stoker::pipeline {

struct Context;       // context.h
struct SourceOptions; // store_fetcher.h

class Loader {
 public:
  static Result<std::unique_ptr<Loader>> create(const LoaderConfig& config);
  ~Loader();

  // Blocks until the next batch is ready. nullopt at the end of the last epoch.
  Result<std::optional<Batch>> next();
  // The same, interruptible: while it waits for the producer (Mode::kPrefetch) it calls
  // `interrupted` every `poll`; when that returns true, next returns Cancelled at once — not
  // sticky: the loader stays usable and a later call delivers the batch (Python's Ctrl-C).
  // Serial and concurrent modes make the batch on the caller's thread and are not interrupted.
  Result<std::optional<Batch>> next(const std::function<bool()>& interrupted,
                                    std::chrono::milliseconds poll);

  LoaderState state() const;           // position after the last delivered batch
  // Before the first next(): continue from `s` (taken with any world size: the remaining global
  // order is re-split over this loader's ranks). InvalidArgument after next() or for a bad state:
  // numbers past this data (state_file.h check_state_bounds), or a fingerprint naming another
  // order (data, seed, batch size, packing, max_length, model: the differing fields named) —
  // unless LoaderConfig::force_resume, which resumes anyway and says so in resume_note().
  Status resume(const LoaderState& s);
  // After resume(): "" or one line the front end shows as a warning (a forced resume across a
  // fingerprint mismatch, or a state without a fingerprint).
  std::string resume_note() const;
  LoaderStats stats() const;
  // The failed samples delivered so far (this run, since create/resume) grouped by kind, the `n`
  // most frequent first, each with its count and first example (error_report.h).
  std::vector<FailureKind> failure_kinds(std::size_t n) const;
  const batch::Arena& arena() const;   // fd()/base() for zero-copy consumers
  const dataset::RankInfo& rank() const;

 private:
  struct Impl;
  explicit Loader(std::unique_ptr<Impl> impl);
  Status resume_mixture(const LoaderState& saved);
  Result<std::optional<Batch>> next_impl(const std::function<bool()>* interrupted,
                                         std::chrono::milliseconds poll);
  std::unique_ptr<Impl> impl_;
};

// Every record's lengths as the packing plan measures them — read, fetch, plan the images from
// their headers, render + tokenize; nothing decoded — in record order, on `config.threads`
// threads (0: all cores). A record that fails (or is over max_length / max_tokens) has tokens
// −1 and the reason. For planning studies (`stoker bench packing`) and length statistics.
struct MeasuredRecord {
  std::uint64_t sample = 0;
  std::int64_t tokens = -1;   // input_ids length
  std::int64_t patches = 0;   // pixel_values rows (vision patches)
  std::optional<std::string> failure;
};
Result<std::vector<MeasuredRecord>> measure_records(const LoaderConfig& config);

// Everything the per-sample work reads for `config` — model, tokenizer, processors, the record
// source, one fetcher, byte budget, max length — as a Loader builds it (loader.cc; also the
// cluster's workers).
Result<std::unique_ptr<Context>> make_context(const LoaderConfig& config);
// The source fields of a loader config (also for tools that read datasets, e.g. inspect).
SourceOptions source_options(const LoaderConfig& config);

}  // namespace stoker::pipeline
