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
// LoaderState (state.h), LoaderStats (stats.h), Batch (batch.h), Mode / Batching / ErrorPolicy
// (policy.h). Errors: InvalidArgument (config), NotFound (data, tokenizer), DataLoss /
// ResourceExhausted (failure budget exceeded, naming the last failed sample), Cancelled.
// See pipeline/README.md.
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
#include "stoker/exec/sched.h"
#include "stoker/image/processor.h"
#include "stoker/model/family.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/batch.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/pipeline/policy.h"
#include "stoker/pipeline/state.h"
#include "stoker/pipeline/stats.h"

namespace stoker::pipeline {

class RemoteSamples;  // remote.h
struct Context;       // context.h
struct SourceOptions; // store_fetcher.h

struct LoaderConfig {
  std::vector<std::string> data;  // JSONL manifests
  std::string model{model::kDefaultModel};  // a preset or a model folder (model/family.h)
  std::string tokenizer;             // folder with tokenizer.json; empty: the model's own (a
                                     // folder's files; a preset: the one installed with stoker)
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
  // Batch memory (batch/arena.h): its size is the loader's memory budget for batches. In-process
  // by default: anonymous memory with transparent huge pages (first touches ~7x cheaper than
  // 4 KiB pages on this project's VMs); `shared` (a memfd) when another process maps the batches
  // — `stoker serve`, the zero-copy bench mode. The warm pool: the arena (up to 1 GiB) is written
  // at create, on the caller's thread (~0.1-0.3 s per GiB with huge pages here), so the first
  // epoch's batches meet no fresh page — the arena is resident from the start; beyond 1 GiB a
  // spare-CPU thread keeps 256 MB (or the largest batch) past the highest block resident.
  batch::ArenaOptions arena = {.shared = false,
                               .prefault_ahead = std::size_t{256} << 20,
                               .warm_bytes = std::size_t{1} << 30};
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

// Everything the per-sample work reads for `config` — model, tokenizer, processors, the record
// source, one fetcher, byte budget, max length — as a Loader builds it (loader_context.cc; also
// the cluster's workers).
Result<std::unique_ptr<Context>> make_context(const LoaderConfig& config);
// The source fields of a loader config (also for tools that read datasets, e.g. inspect).
SourceOptions source_options(const LoaderConfig& config);

}  // namespace stoker::pipeline
