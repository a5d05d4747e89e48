// LoaderConfig: everything a Loader is made from, and its validation. Front ends do not fill it
// field by field: the option schema (config/options.cc) declares each option once — name, type,
// range, default, help, environment fallback — and config::build turns flags, keyword arguments,
// the model folder's stoker.json and the environment into one of these (model folder parsed
// once: model_config). C++ callers may fill it directly; Loader::create validates it again.
// BatchOptions (policy.h) — what the batches look like — is shared with the engine
// (EngineOptions derives from it): one struct, no field copied by hand between the two.
// Errors: InvalidArgument naming the field ("loader: batch_size must be at least 1").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/batch/arena.h"
#include "stoker/batch/mrope.h"
#include "stoker/dataset/order.h"
#include "stoker/exec/sched.h"
#include "stoker/image/processor.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/policy.h"

namespace stoker::pipeline {

class RemoteSamples;  // remote.h

struct LoaderConfig : BatchOptions {
  std::vector<std::string> data;  // JSONL manifests
  std::string model{model::kDefaultModel};  // a preset or a model folder (model/family.h)
  // `model` parsed (config::build does it once per run and every Loader of the run shares it;
  // model::Family::load_config: a Qwen-VL family's ModelConfig, null for a family without one);
  // null: the family reads `model` itself when the Loader opens it.
  std::shared_ptr<const model::ModelConfig> model_config;
  std::string tokenizer;             // folder with tokenizer.json; empty: the model's own (a
                                     // folder's files; a preset: the one installed with stoker)
  // The chat template (model/chat_template_source.h): a named template of the model folder
  // (empty: transformers' choice), and template kwargs for every record (a JSON object text; a
  // record's "chat_template_kwargs" win).
  std::string chat_template;
  std::string chat_template_kwargs;
  // Image compatibility (image/processor.h, over the model's): the EXIF orientation applied as
  // transformers' load_image does, or ignored as recipes that open images themselves do
  // (qwen-vl-utils, LLaMA-Factory); images with a side below the factor resized as transformers
  // >= 4.53 does, or refused as <= 4.52 did.
  bool apply_exif_orientation = true;
  image::SmartResizeRules small_images = image::SmartResizeRules::kCurrent;
  // Qwen2.5-VL video time index, a choice within the family's position rule (batch/mrope.h
  // TemporalRule::kSeconds; families without it ignore it): t · second_per_grid_t ·
  // tokens_per_second in float32, then truncated (transformers 4.49, Qwen's fine-tuning code,
  // vLLM), or with second_per_grid_t cast to an integer first (later 4.5x releases to 4.57, 5.x
  // until transformers PR 48669); they differ at fractional seconds per grid (README "Video").
  batch::TimeIndexMode video_time_index = batch::TimeIndexMode::kFloatThenTruncate;
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
  // Media one record may reference (images + video files + video frames, each one fetch); a
  // record with more fails at "read" (ResourceExhausted) before any is resolved or fetched.
  std::int64_t max_media_per_record = 1024;
  // A remote manifest's local copy (its claimed size and the bytes streamed); default 4 GiB.
  std::int64_t max_manifest_bytes = std::int64_t{4} << 30;
  // The retry window of a remote request (all attempts together); 0: io's default, 120 s (the
  // option schema resolves $STOKER_IO_DEADLINE_MS into it). A store that stays down longer
  // stops the run (resumable).
  std::int64_t io_deadline_ms = 0;
  int io_max_attempts = 0;          // attempts per request, a cap for tests; 0: io's default
  // Remote manifests are copied here (keyed by URI + ETag, verified by SHA-256), a folder of
  // this user's only, checked on every use (io::PrivateDir); empty: default_cache_dir().
  std::string cache_dir;
  std::int64_t manifest_chunk_bytes = std::int64_t{8} << 20;  // ranged GETs of a remote manifest
  bool fetch_blocking = false;      // one blocking read per I/O thread (the A/B baseline)
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
  // Resume (issue #28): resume() refuses a state whose order fingerprint differs from this
  // run's (fingerprint.h); true resumes anyway — the user means it — and says so
  // (Loader::resume_note()).
  bool force_resume = false;
  // A mixture's resume whose spec hash differs (plan_schedule.h): refused unless this (then the
  // new plan starts at the saved position, and the data fingerprint is not compared).
  bool allow_spec_change = false;
  // The error report is a diagnostic output: a failed write is a warning on stderr naming the
  // path (the report stops there) and the run goes on — unless strict_outputs: then the write
  // error stops the run.
  bool strict_outputs = false;

  Status validate() const;
};

// What this config chooses about its model (model/family.h): tokenizer, image settings (EXIF
// orientation, small images), the video time index, and model_config as the parse to share.
// make_context opens the model with them.
model::ModelOptions model_options(const LoaderConfig& config);
// The Qwen-VL model the run uses (model_config, or `model` parsed when it is null) with this
// config's image settings applied: for tools that read a Qwen-VL model's settings without
// opening it (`stoker inspect`).
Result<model::ModelConfig> resolved_model(const LoaderConfig& config);

}  // namespace stoker::pipeline
