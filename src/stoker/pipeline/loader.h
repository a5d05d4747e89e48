// Loader: the engine. Streams ready training batches for one rank from JSONL datasets:
// plan (seeded per-epoch order, this rank's share) → read record (manifest index, pread) → fetch
// media (I/O pool, byte budget) → prepare on the CPU pool (parse, validate, probe, plan,
// decode + resize, render + tokenize + labels + mRoPE: everything that can fail) → emit
// (normalise + patchify straight into the batch's arena block: cannot fail) → assemble → a
// prefetch ring of `prefetch` ready batches. Completion is out of order; delivery is in sample
// order, so bytes never depend on thread count or timing. A failed sample is skipped, counted,
// reported (JSONL) and replaced by the next one, deterministically; past the failure budget (or
// at the first error with `strict`) next() returns the error. A producer error reaches the
// consumer at its next call. next() is for one consumer thread; stats() and state() are
// thread-safe. A Batch may outlive its Loader (it keeps the arena alive).
// Errors: InvalidArgument (config), NotFound (data, tokenizer), DataLoss/ResourceExhausted (failure
// budget exceeded, naming the last failed sample), Cancelled. See pipeline/README.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/batch/arena.h"
#include "stoker/batch/batch.h"
#include "stoker/dataset/order.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/pipeline/fingerprint.h"
#include "stoker/pipeline/loader_config.h"
#include "stoker/obs/histogram.h"

namespace stoker::pipeline {

// Resumable by position, not payload: restart delivers exactly the samples not yet delivered.
// Packing / token budgets: position is the first sample of a planning window and `packs` the
// units of that window the job consumed; `plan` identifies the plan's options (a resume with
// other options is refused). Text: "stoker-state v1 epoch=E position=P errors=K[ packs=C
// plan=XXXXXXXX][ fp.NAME=VALUE ...]" (the order fingerprint: fingerprint.h; the state file:
// state_file.h).
struct LoaderState {
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;     // samples of this epoch's global order consumed by all ranks
                                  // (failed samples count as consumed: they are never retried)
  std::uint64_t errors = 0;       // error-log cursor: failed samples reported so far (lines of
                                  // the error report; a resumed run keeps that many lines)
  std::uint64_t packs = 0;        // packing: units of the window at `position` consumed
  std::uint32_t plan = 0;         // packing: plan id (0: not a packing state)
  Fingerprint fingerprint = {};   // what decided the order (Loader::state() sets it; empty in a
                                  // state written before fingerprints: resumed with a warning)
  std::string serialize() const;  // a few bytes, text
  static Result<LoaderState> parse(std::string_view text);
};

struct StageStats {
  std::string name;       // read, fetch, prepare, emit, assemble
  double busy_s = 0;      // summed over threads
  std::int64_t items = 0;
  int threads = 1;        // threads that can work on this stage (busy_s / threads / elapsed =
                          // its utilisation; the highest one is the bottleneck)
  obs::HistogramSnapshot latency;  // per item (read/fetch/prepare: a sample; emit: an image;
                                   // assemble: a batch)
};

struct LoaderStats {
  std::int64_t batches = 0, samples = 0, failed = 0;
  double wait_s = 0;      // consumer time blocked inside next()
  double elapsed_s = 0;   // since the first next()
  double wait_ratio() const { return elapsed_s > 0 ? wait_s / elapsed_s : 0; }
  double first_batch_s = 0;
  // Where the producer's time went (kPrefetch: its own thread; on demand: inside next()):
  double arena_wait_s = 0;   // blocked on a full arena (the consumer holds batches)
  double sample_wait_s = 0;  // waiting for the next prepared sample (read, fetch, prepare)
  double emit_s = 0;         // assembling batches: images decoded straight into the block
  double fetch_budget_wait_s = 0;  // I/O threads blocked on the fetch byte budget (summed)
  std::vector<StageStats> stages;
  std::uint64_t arena_peak_bytes = 0;
  std::uint64_t fetch_peak_bytes = 0;  // media bytes in flight, peak
  // Now: arena bytes in use and its size, media bytes in flight, batches ready in the prefetch
  // ring, samples in flight (submitted, not yet taken in order) and those prepared and waiting
  // in the reorder buffer.
  std::uint64_t arena_in_use_bytes = 0, arena_capacity_bytes = 0;
  std::int64_t fetch_in_flight_bytes = 0;
  std::int64_t ready_batches = 0, samples_in_flight = 0, prepared_waiting = 0;
  // Failed samples by (stage, error code), as reported; and how long each next() blocked.
  std::map<std::pair<std::string, std::string>, std::int64_t> failed_by;
  obs::HistogramSnapshot next_wait;
  // Tokens: real (the samples') vs computed (what the batches cost a trainer: B × padded length,
  // or max_tokens per pack row). efficiency = real / computed; padding share = 1 − efficiency.
  std::int64_t real_tokens = 0, computed_tokens = 0, sequences = 0;
  double efficiency() const {
    return computed_tokens > 0 ? static_cast<double>(real_tokens) / computed_tokens : 0;
  }
  // Packing / token budgets: the delivered steps' balance over the data-parallel ranks, as
  // Σ max / Σ mean over steps (the time a synchronous step waits for its slowest rank, relative
  // to a perfect split), for vision patches and text tokens; the worst single step's
  // patch ratio; tail repeats delivered.
  std::int64_t steps = 0, repeats = 0;
  double sum_max_patches = 0, sum_mean_patches = 0, sum_max_tokens = 0, sum_mean_tokens = 0;
  double worst_patch_ratio = 0;
  double patch_balance() const { return sum_mean_patches > 0 ? sum_max_patches / sum_mean_patches : 1; }
  double token_balance() const { return sum_mean_tokens > 0 ? sum_max_tokens / sum_mean_tokens : 1; }
};

// What limits the run, from measured waits (not from busy shares alone): the trainer (the
// consumer hardly waits), the arena (the producer waits for space the consumer holds), the
// fetch byte budget, the media I/O (samples arrive late while the CPU stages idle), or the CPU
// stage that is busiest. One line for summaries and stats().
std::string describe_limiter(const LoaderStats& s);

struct BatchAccess;

// A delivered batch. Memory stays valid until the Batch is destroyed (or release() is called),
// which returns its block to the arena.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  ~Batch();

  const batch::BatchLayout& layout() const { return layout_; }
  const std::uint8_t* data(const batch::TensorView& t) const { return base_ + t.offset; }
  // The tensor's first element; nullptr if the layout has no such tensor.
  template <typename T>
  const T* as(const std::string& name) const {
    const batch::TensorView* t = layout_.find(name);
    return t == nullptr ? nullptr : reinterpret_cast<const T*>(base_ + t->offset);
  }
  std::int64_t size() const;  // samples (rows, or sub-sequences of a pack); the last batch of
                              // an epoch may be short
  // Packing / token budgets: a unit delivered again to fill the last step of an epoch (every
  // rank needs a batch in every step); its samples were delivered once already.
  bool is_repeat() const { return repeat_; }
  bool valid() const { return base_ != nullptr; }
  void release();             // idempotent

 private:
  friend class Loader;
  friend struct BatchAccess;  // the engine builds batches (loader.cc)
  batch::BatchLayout layout_;
  const std::uint8_t* base_ = nullptr;
  bool repeat_ = false;
  std::function<void(batch::Block)> release_;  // returns the block; keeps the arena alive
};

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

}  // namespace stoker::pipeline
