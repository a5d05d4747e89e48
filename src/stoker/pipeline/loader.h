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
#include "stoker/batch/pack_collate.h"
#include "stoker/dataset/order.h"
#include "stoker/exec/sched.h"
#include "stoker/image/processor.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/obs/histogram.h"
#include "stoker/obs/trace.h"

namespace stoker::pipeline {

class RemoteSamples;  // remote.h

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

struct LoaderConfig {
  std::vector<std::string> data;  // JSONL manifests
  std::string model = "qwen2.5-vl";  // preset or HF model folder
  std::string tokenizer;             // folder with tokenizer.json; empty: the model folder
  int batch_size = 8;
  std::int64_t max_length = 8192;
  Padding padding = Padding::kLongest;
  image::PixelDType pixel_dtype = image::PixelDType::kFloat32;
  // Image compatibility (image/processor.h, over the model's): the EXIF orientation applied as
  // transformers' load_image does, or ignored as recipes that open images themselves do
  // (qwen-vl-utils, LLaMA-Factory); images with a side below the factor resized as transformers
  // >= 4.53 does, or refused as <= 4.52 did.
  bool apply_exif_orientation = true;
  image::SmartResizeRules small_images = image::SmartResizeRules::kCurrent;
  std::uint64_t seed = 0;
  std::int64_t epochs = 1;          // -1: forever
  dataset::RankFlags rank;          // explicit rank/world; unset fields come from the launcher env
  Mode mode = Mode::kPrefetch;
  int threads = 0;                  // CPU pool size; 0: hardware concurrency
  int prefetch = 4;                 // ready batches kept ahead (kPrefetch)
  // kPrefetch: start producing when the loader is created, so the ring fills while the trainer
  // builds its model; a resume() before the first next() restarts production at its state.
  // Off: production starts at the first next().
  bool prefetch_on_create = true;
  int io_threads = 4;               // record reads + media fetches (blocking pread)
  int window = 0;                   // samples in flight incl. finished-but-unconsumed; 0: auto
                                    // (2·batch_size·(prefetch+1) for kPrefetch, batch_size for
                                    // kConcurrent, 1 for kSerial)
  std::int64_t fetch_bytes_in_flight = std::int64_t{256} << 20;
  // What a record may reach (the trust boundary; README "Trust boundary", io/media_access.h).
  // A local manifest reads local files only under its own folder and these roots; a remote
  // manifest never reads local files; s3:// media only in a remote manifest's own bucket and
  // in these buckets ("*": any bucket).
  std::vector<std::string> media_roots;
  bool trust_media_paths = false;   // local manifests may read any local file (loudly)
  std::vector<std::string> allow_buckets;
  // Every read is bounded: a media object (file, HTTP body) and a JSONL record (one line).
  std::int64_t max_object_bytes = std::int64_t{256} << 20;
  std::int64_t max_record_bytes = std::int64_t{16} << 20;
  // The retry window of a remote request (all attempts together); 0: $STOKER_IO_DEADLINE_MS,
  // else 120 s. A store that stays down longer stops the run (resumable).
  std::int64_t io_deadline_ms = 0;
  // S3 credentials from the EC2 instance metadata service: consulted only when true or when
  // $AWS_EC2_METADATA_SERVICE_ENDPOINT is set — never on stoker's own initiative.
  bool imds = false;
  // Scheduling class of the loader's own threads (CPU, I/O and emit pools, the prefetch
  // producer); the caller's thread is never changed. Batch: a waking loader thread does not
  // preempt the trainer's thread, so next() is not left waiting for a core (exec/sched.h).
  exec::SchedClass worker_sched = exec::SchedClass::kBatch;
  // Batch memory (batch/arena.h). `arena.bytes` is the cap (`--arena-mb`): address space
  // reserved, the memory bound where backpressure starts; memory is used only for what the run
  // touches. In-process by default: anonymous memory with transparent huge pages; `shared` (a
  // memfd) when another process maps the batches — `stoker serve`, the zero-copy bench mode.
  // Warm: every block is resident before the producer writes into it and a spare-CPU thread
  // makes the pages ahead resident, as far as the plan says: (prefetch + 2) × the largest batch
  // planned so far + slack (Loader::create sets the depth); stats().arena_plan says how big
  // and why.
  batch::ArenaOptions arena = {.shared = false, .warm = true};
  ErrorPolicy errors;
  PackingOptions packing;
  // Over max_length: keep the longest prefix of whole turns that ends with an assistant turn
  // (text::Overflow::kTruncateTurns) instead of dropping the sample.
  bool truncate = false;
  // Tracing (obs/trace.h; README "Observability"): a Chrome/Perfetto trace-event JSON of the
  // run. Either a tracer the caller owns and writes (several loaders may share one: `stoker
  // serve`), or a path: the loader then makes its own tracer with `trace` options and writes
  // it when it is destroyed (a failure to write is printed to stderr). Neither: off.
  std::shared_ptr<obs::Tracer> tracer;
  std::string trace_path;
  obs::TraceOptions trace;
  // Test hook: called before each media read with (record id, media index); may sleep to
  // simulate I/O jitter. Must be thread-safe. Never affects output bytes.
  std::function<void(std::uint64_t, int)> io_delay_hook;
  // Scale-out (cluster/): the per-sample work (read, fetch, prepare, pixels) is done by these
  // remote workers; the engine keeps order, policy, state and assembly (pipeline/remote.h).
  std::shared_ptr<RemoteSamples> remote;

  Status validate() const;
};

// Resumable by position, not payload: restart delivers exactly the samples not yet delivered.
// Packing / token budgets: position is the first sample of a planning window and `packs` the
// units of that window the job consumed; `plan` identifies the plan's options (a resume with
// other options is refused). Text: "stoker-state v1 epoch=E position=P errors=K[ packs=C
// plan=XXXXXXXX]".
struct LoaderState {
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;     // samples of this epoch's global order consumed by all ranks
                                  // (failed samples count as consumed: they are never retried)
  std::uint64_t errors = 0;       // error-log cursor: failed samples reported so far (lines of
                                  // the error report; a resumed run keeps that many lines)
  std::uint64_t packs = 0;        // packing: units of the window at `position` consumed
  std::uint32_t plan = 0;         // packing: plan id (0: not a packing state)
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
  // The arena's planned size (batch/arena_plan.h; ≤ the capacity, the cap) and why, in words.
  std::uint64_t arena_planned_bytes = 0;
  std::string arena_plan;
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
  // order is re-split over this loader's ranks). InvalidArgument after next() or for a bad state.
  Status resume(const LoaderState& s);
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
