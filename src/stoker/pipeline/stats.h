// What a Loader measured about itself (Loader::stats(): `stoker run`'s summary, Python's
// stats(), the Prometheus families of metrics.h): consumer waits, per-stage busy time and
// latency, where the producer's time went, failures by (stage, code), queue depths, token
// efficiency and the packing balance; describe_limiter() names what limits the run from those
// waits. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/obs/histogram.h"
#include "stoker/pipeline/failure.h"

namespace stoker::pipeline {

struct StageStats {
  std::string name;       // read, fetch, prepare, emit, assemble
  double busy_s = 0;      // summed over threads
  std::int64_t items = 0;
  int threads = 1;        // threads that can work on this stage (busy_s / threads / elapsed =
                          // its utilisation; the highest one is the bottleneck)
  obs::HistogramSnapshot latency;  // per item (read/fetch/prepare: a sample; emit: a medium;
                                   // assemble: a batch)
};

// A mixture's source (issue 23): its samples in the job's plan so far (all ranks, up to the
// state's position: the plan's per-source cursors) and this rank's delivered and failed ones.
struct SourceStats {
  std::string name;
  double share = 0;  // weight (weighted) or repetitions (epochized)
  std::uint64_t records = 0;
  std::uint64_t first_id = 0;  // its records are sample ids [first_id, first_id + records)
  // Energon's subflavors of the leaf (a JSON object, outer levels' keys winning): attached to
  // every sample of it — sample id -> source by the id range above.
  std::string subflavors = "{}";
  std::uint64_t planned = 0;
  std::int64_t delivered = 0, failed = 0;
};

struct LoaderStats {
  std::int64_t batches = 0, samples = 0, failed = 0;
  std::vector<SourceStats> sources;  // a mixture's leaves; empty otherwise
  double wait_s = 0;      // consumer time blocked inside next()
  double elapsed_s = 0;   // since the first next()
  double wait_ratio() const { return elapsed_s > 0 ? wait_s / elapsed_s : 0; }
  double first_batch_s = 0;
  // Where the producer's time went (kPrefetch: its own thread; on demand: inside next()):
  double arena_wait_s = 0;   // blocked on a full arena (the consumer holds batches)
  double sample_wait_s = 0;  // waiting for the next prepared sample (read, fetch, prepare)
  double emit_s = 0;         // assembling batches: media decoded straight into the block
  double fetch_budget_wait_s = 0;  // I/O threads blocked on the fetch byte budget (summed)
  std::vector<StageStats> stages;
  // The model's chat template as it renders (text::ChatRenderer::describe: which template, and
  // which label rule), and the time building samples from records took inside prepare (chat
  // template, tokenisation, labels; summed over threads) for how many.
  std::string chat_template;
  double sample_build_s = 0;
  std::int64_t samples_built = 0;
  std::uint64_t arena_peak_bytes = 0;
  std::uint64_t fetch_peak_bytes = 0;  // media bytes in flight, peak
  // Now: arena bytes in use and its size, media bytes in flight, batches ready in the prefetch
  // ring, samples in flight (submitted, not yet taken in order) and those prepared and waiting
  // in the reorder buffer.
  std::uint64_t arena_in_use_bytes = 0, arena_capacity_bytes = 0;
  // The arena's planned size (batch/arena_plan.h; ≤ the capacity, the cap) and why, in words.
  std::uint64_t arena_planned_bytes = 0;
  std::string arena_plan;
  std::int64_t fetch_in_flight_bytes = 0;
  std::int64_t ready_batches = 0, samples_in_flight = 0, prepared_waiting = 0;
  // Failed samples by (stage, error code), as reported; and how long each next() blocked.
  std::map<std::pair<FailureStage, ErrorCode>, std::int64_t> failed_by;
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

}  // namespace stoker::pipeline
