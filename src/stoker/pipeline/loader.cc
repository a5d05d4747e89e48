#include "stoker/pipeline/loader.h"

#include "stoker/pipeline/mixture_records.h"
#include "stoker/pipeline/plan_schedule.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <cstdio>
#include <mutex>
#include <thread>

#include "stoker/base/clock.h"
#include "stoker/base/hash.h"
#include "stoker/base/printable.h"
#include "stoker/exec/bounded_queue.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/pipeline/engine.h"
#include "stoker/pipeline/store_fetcher.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/pipeline/pack_schedule.h"
#include "stoker/pipeline/prepare.h"
#include "stoker/pipeline/state_file.h"
#include "stoker/base/option_name.h"

namespace stoker::pipeline {

// ---- state ----

namespace {

// What the plan depends on besides the data and the world size: a resume with other values
// would skip or repeat samples, so a state carries this and a mismatch is refused.
std::uint32_t plan_id(const LoaderConfig& c) {
  const std::string key =
      "v1|" + std::to_string(static_cast<int>(c.packing.batching)) + "|" +
      std::to_string(c.pack_capacity()) + "|" + std::to_string(c.packing.window) + "|" +
      std::to_string(static_cast<int>(c.packing.format)) + "|" +
      std::to_string(c.packing.format == batch::PackFormat::kMegatron ? c.packing.align : 1) +
      "|" + std::to_string(c.seed) + "|" + std::to_string(c.max_length) + "|" +
      (c.truncate ? "t" : "d") + "|" + c.model +
      (c.small_images == image::SmartResizeRules::kCurrent ? "" : "|refuse-small");
  const std::uint32_t h = fnv1a32(key);
  return h == 0 ? 1 : h;
}

// The arena's plan depth: batches alive at once (batch/arena_plan.h).
batch::ArenaOptions arena_options(const LoaderConfig& c) {
  batch::ArenaOptions a = c.arena;
  if (c.mode == Mode::kPrefetch) {
    a.depth = c.prefetch + 2;
    a.depth_why = "prefetch " + std::to_string(c.prefetch) + " + the one assembled + the one in use";
  } else {
    a.depth = 2;
    a.depth_why = "the one assembled + the one in use";
  }
  return a;
}

// This run's order fingerprint (fingerprint.h): the records as the source identifies them
// (dataset::RecordSource::identity: each manifest's place and version), the options, and the
// model as its family fingerprints it (model::Model::fingerprint).
Fingerprint run_fingerprint(const LoaderConfig& c, const Context& ctx, std::uint64_t global_batch) {
  Fingerprint fp = order_fingerprint(c, {.records = ctx.records->size(), .identity = ctx.records->identity()},
                                     {.family = std::string(ctx.model->family()),
                                      .key = ctx.model->fingerprint()});
  // A mixture's order depends on the global batch (batch size x world size), not on the
  // per-rank batch: a resume at another world size keeps it.
  if (global_batch > 0) {
    for (auto& [name, value] : fp.fields) {
      if (name == "batch_size") {
        name = "global_batch";
        value = std::to_string(global_batch);
      }
    }
  }
  return fp;
}

// The mixture's global plan (plan_schedule.h), or null when the data is not a mixture spec.
Result<std::shared_ptr<const dataset::Plan>> mixture_plan(const LoaderConfig& c, const Context& ctx,
                                                          const dataset::RankInfo& rank) {
  const auto* mix = dynamic_cast<const MixtureRecords*>(ctx.records.get());
  if (mix == nullptr) return std::shared_ptr<const dataset::Plan>();
  if (c.packing.batching != Batching::kFixed && mix->spec().mode == dataset::MixMode::kWeighted) {
    return invalid_argument("packing and token budgets of a mixture take its epochized plan (blend_epochized / "
                            "\"repeat\"); a weighted blend reads in fixed batches");
  }
  dataset::PlanConfig pc;
  pc.mode = mix->spec().mode == dataset::MixMode::kWeighted ? dataset::PlanMode::kWeighted
                                                            : dataset::PlanMode::kEpochized;
  pc.seed = c.seed;
  pc.global_batch = static_cast<std::uint64_t>(c.batch_size) * static_cast<std::uint64_t>(rank.world_size);
  pc.mixture_hash = mix->spec().hash;
  for (std::size_t i = 0; i < mix->leaves(); ++i) {
    const dataset::MixtureLeaf& leaf = mix->spec().leaves[i];
    pc.sources.push_back({.samples = mix->leaf_size(i), .weight = leaf.weight, .repetitions = leaf.repetitions});
  }
  STOKER_ASSIGN_OR_RETURN(dataset::Plan plan, dataset::Plan::create(std::move(pc)));
  return std::make_shared<const dataset::Plan>(std::move(plan));
}

// A state's fingerprint against this run's: equal → resume; different → refused naming the
// fields, or with `force` resumed with a note; absent (an older stoker) → resumed with a note.
Status check_fingerprint(const LoaderState& s, const Fingerprint& now, bool force,
                         std::string* note) {
  const std::string where = "epoch " + std::to_string(s.epoch) + " position " +
                            std::to_string(s.position);
  if (s.fingerprint.empty()) {
    *note = "the state has no order fingerprint (written by an older stoker): its data, seed, "
            "batch size and model cannot be checked; resuming at " + where + " as it says";
    return ok_status();
  }
  const std::vector<FieldDiff> diffs = differences(s.fingerprint, now);
  if (diffs.empty()) return ok_status();
  const std::string force_name = option_name("force_resume=True", "--force-resume");
  if (!force) {
    return invalid_argument("resume: the state was written for another order (" +
                            describe(diffs) + "); resuming it here would repeat and skip "
                            "samples. Resume with the state's data and options, or pass " +
                            force_name + " to continue at " + where + " of this run's order "
                            "anyway");
  }
  *note = "resuming a state written for another order (" + describe(diffs) + ") because of " +
          force_name + ": continuing at " + where + " of this run's order; samples may repeat "
          "or be skipped";
  return ok_status();
}

}  // namespace

// ---- Loader ----

struct Loader::Impl {
  LoaderConfig config;
  dataset::RankInfo rank;
  std::unique_ptr<Context> ctx;
  std::shared_ptr<batch::Arena> arena;
  std::unique_ptr<exec::ThreadPool> cpu, io, emit;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<exec::BoundedQueue<ReadyBatch>> ring;
  std::jthread producer;
  ErrorReport report;
  int cpu_threads = 1, emit_threads = 0;

  mutable std::mutex mu;  // guards the consumer-side fields below
  bool started = false, ended = false;
  std::optional<Error> fatal;
  LoaderState start_state, state;
  bool resumed = false;
  Fingerprint fingerprint;  // this run's order (state_file.h, fingerprint.h)
  std::shared_ptr<const dataset::Plan> plan;  // a mixture's global plan (null: not a mixture)
  std::vector<std::string> plan_warnings;     // what an allowed spec change did
  std::string resume_note;  // a forced or unchecked resume, said once
  bool report_broken = false;  // the error report failed to write (diagnostic: warned once)
  std::int64_t batches = 0, samples = 0, failed = 0;
  FailureTally failure_kinds;
  std::vector<std::int64_t> source_delivered, source_failed;  // a mixture's, per leaf
  // A packed mixture's planned counts (its state has no cursors): counted up to the state's
  // (epoch, position) incrementally, the positions since the last count only.
  mutable std::uint64_t counted_epoch = 0, counted_position = 0;
  mutable std::vector<std::uint64_t> counted;
  LoaderStats tokens;  // its token, efficiency and balance fields only
  std::int64_t first_call_ns = 0, last_ns = 0, wait_ns = 0, first_batch_ns = -1;
  obs::Histogram next_wait;
  // Tracing: the loader's own tracer (config.trace_path) is written when the loader goes.
  bool owns_trace = false;

  ~Impl() {
    stop_engine();
    if (owns_trace && ctx != nullptr && ctx->tracer != nullptr) {
      // A diagnostic output (issue #28): a warning naming the path, never an error from here.
      if (Status st = ctx->tracer->write(config.trace_path); !st.ok()) {
        std::fprintf(stderr, "stoker: warning: %s: %s (the trace is lost; the run itself is "
                     "unaffected)\n", option_name("trace", "--trace").c_str(),
                     printable(st.error().to_string()).c_str());
      }
    }
  }

  // Stops the producer and the pools, drops what was produced and not delivered (their blocks
  // go back to the arena), and destroys the engine. Idempotent.
  void stop_engine() {
    if (producer.joinable()) {
      producer.request_stop();
      if (ring) ring->close();
      producer.join();
    }
    if (ring) {
      while (ring->try_pop()) {
      }
    }
    if (io) io->shutdown(exec::ShutdownMode::kCancel);
    if (cpu) cpu->shutdown(exec::ShutdownMode::kCancel);
    if (emit) emit->shutdown(exec::ShutdownMode::kCancel);
    engine.reset();
    producer = std::jthread();
    ring.reset();
    io.reset();
    cpu.reset();
    emit.reset();
  }

  // Schedule from start_state, pools, engine and (kPrefetch) the producer thread.
  Status start_engine();
  // A resume's state adopted: the order starts at `s`. An engine already started
  // (prefetch_on_create began at the start of the order) is discarded and started again at `s`.
  Status resume_at(const LoaderState& s) {
    start_state = s;
    state = s;
    resumed = true;
    if (!engine) return ok_status();
    stop_engine();
    return start_engine();
  }
  Status open_report();
  Status start();
  // nullopt: `interrupted` returned true while waiting (prefetch only).
  std::optional<ReadyBatch> produce_one(const std::function<bool()>* interrupted = nullptr,
                                        std::chrono::milliseconds poll = {});
};

// At the first next(): the engine (unless prefetch_on_create already started it) and the error
// report. The report is opened only here — after any resume() — because opening it truncates
// it to the start state's cursor.
Status Loader::Impl::start() {
  if (!engine) STOKER_RETURN_IF_ERROR(start_engine());
  return open_report();
}

Status Loader::Impl::open_report() {
  if (config.errors.report_path.empty()) return ok_status();
  return report.open(config.errors.report_path,
                     resumed ? static_cast<std::int64_t>(start_state.errors) : -1);
}

Status Loader::Impl::start_engine() {
  EngineOptions eo;
  static_cast<BatchOptions&>(eo) = config;  // what the batches look like: one struct
  eo.errors_before = start_state.errors;
  eo.remote = config.remote.get();
  eo.pad_id = ctx->model->pad_id();
  eo.sample_rows = ctx->model->position_rows();
  eo.float_positions = ctx->model->float_positions();
  std::size_t window = static_cast<std::size_t>(config.window);
  if (window == 0) {
    // Units hold a varying number of samples: the window is sized for ~16 per unit.
    const int b = config.packing.batching == Batching::kFixed ? config.batch_size : 16;
    window = config.mode == Mode::kSerial       ? 1
             : config.mode == Mode::kConcurrent ? static_cast<std::size_t>(b)
                                                : static_cast<std::size_t>(2 * b * (config.prefetch + 1));
  }
  eo.window = config.mode == Mode::kSerial ? 1 : window;
  eo.on_demand = config.mode != Mode::kPrefetch;
  if (config.mode != Mode::kSerial) {
    STOKER_ASSIGN_OR_RETURN(cpu, exec::ThreadPool::create({.num_threads = config.threads,
                                                           .name = "stoker-cpu",
                                                           .sched = config.worker_sched}));
    STOKER_ASSIGN_OR_RETURN(io, exec::ThreadPool::create({.num_threads = config.io_threads,
                                                          .name = "stoker-io",
                                                          .sched = config.worker_sched}));
    cpu_threads = cpu->num_threads();
    // Emit helpers decode + resize + normalise the batch's images into its block (the heavy
    // part); prepare tasks only plan and tokenize, so the CPU pool's threads are mostly idle
    // meanwhile. As many helpers as CPU threads; the producer works too.
    emit_threads = cpu_threads;
    STOKER_ASSIGN_OR_RETURN(emit, exec::ThreadPool::create({.num_threads = emit_threads,
                                                            .name = "stoker-emit",
                                                            .sched = config.worker_sched}));
  }
  dataset::OrderConfig order{.seed = config.seed, .shuffle = true, .tail = dataset::TailPolicy::kPad};
  std::unique_ptr<ItemSource> source;
  if (plan != nullptr && config.packing.batching == Batching::kFixed) {
    const auto& mix = dynamic_cast<const MixtureRecords&>(*ctx->records);
    std::vector<std::uint64_t> first;
    for (std::size_t i = 0; i < mix.leaves(); ++i) first.push_back(mix.first_id(i));
    plan_warnings.clear();
    STOKER_ASSIGN_OR_RETURN(source, PlanSchedule::make(plan, std::move(first), rank, config.epochs, start_state,
                                                       config.allow_spec_change, &plan_warnings));
  } else if (config.packing.batching == Batching::kFixed) {
    STOKER_ASSIGN_OR_RETURN(source, Schedule::make(ctx->records->size(), order, rank, config.epochs,
                                                   start_state));
  } else {
    PackPlanOptions po;
    po.kind = config.packing.batching == Batching::kPack ? batch::UnitKind::kPack
                                                         : batch::UnitKind::kPaddedBudget;
    po.capacity = config.pack_capacity();
    po.window = static_cast<std::uint64_t>(config.packing.window);
    po.format = config.packing.batching == Batching::kPack ? config.packing.format
                                                           : batch::PackFormat::kHF;
    po.align = config.pack_align();
    po.plan_id = plan_id(config);
    po.measure_in_flight = 2 * config.io_threads;
    std::uint64_t n = ctx->records->size();
    if (plan != nullptr) {
      // A mixture: the windows are windows of its epochized global plan (epoch e, position p).
      const auto& mix = dynamic_cast<const MixtureRecords&>(*ctx->records);
      std::vector<std::uint64_t> first;
      for (std::size_t i = 0; i < mix.leaves(); ++i) first.push_back(mix.first_id(i));
      n = plan->epoch_length();
      po.order_at = [p = plan, first, n](std::uint64_t e, std::uint64_t pos) {
        const dataset::PlanItem it = p->at(e * n + pos);
        return first[it.source] + it.sample;
      };
    }
    STOKER_ASSIGN_OR_RETURN(source, PackSchedule::make(*ctx, n, order, rank,
                                                       config.epochs, start_state, po, io.get()));
  }
  engine = std::make_unique<Engine>(*ctx, std::move(source), arena, cpu.get(), io.get(),
                                    emit.get(), eo);
  if (config.mode == Mode::kPrefetch) {
    ring = std::make_unique<exec::BoundedQueue<ReadyBatch>>(static_cast<std::size_t>(config.prefetch));
    producer = std::jthread([this](std::stop_token stop) {
      // Best effort, as the pools: a refused class leaves the producer in the caller's class.
      if (config.worker_sched != exec::SchedClass::kNormal) {
        (void)exec::set_current_thread_sched(config.worker_sched);
      }
      // Named from inside once its class is set, before its first trace event (a tracer reads
      // the name then).
      pthread_setname_np(pthread_self(), "stoker-produce");
      for (;;) {
        ReadyBatch rb = engine->produce(stop);
        bool last = rb.end || rb.fatal.has_value();
        if (last) arena->stop_prefault();  // no block will be asked for again
        if (!ring->push(std::move(rb), stop)) return;
        if (ctx->tracer != nullptr) {
          ctx->tracer->counter(ctx->trace_ids.ready_batches, static_cast<std::int64_t>(ring->size()));
        }
        if (last) return;
      }
    });
  }
  return ok_status();
}

std::optional<ReadyBatch> Loader::Impl::produce_one(const std::function<bool()>* interrupted,
                                                    std::chrono::milliseconds poll) {
  if (config.mode != Mode::kPrefetch) {
    ReadyBatch rb = engine->produce({});
    if (rb.end || rb.fatal) arena->stop_prefault();  // no block will be asked for again
    return rb;
  }
  std::optional<ReadyBatch> rb;
  if (interrupted == nullptr) {
    rb = ring->pop();
  } else {
    for (;;) {
      rb = ring->pop_until(std::chrono::steady_clock::now() + poll);
      if (rb || ring->drained()) break;
      if ((*interrupted)()) return std::nullopt;
    }
  }
  if (ctx->tracer != nullptr) {
    ctx->tracer->counter(ctx->trace_ids.ready_batches, static_cast<std::int64_t>(ring->size()));
  }
  if (!rb) {
    ReadyBatch out;
    out.fatal = cancelled("loader: the producer stopped");
    return out;
  }
  return std::move(*rb);
}

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

Result<std::unique_ptr<Context>> make_context(const LoaderConfig& config) {
  auto ctx = std::make_unique<Context>();
  ctx->tracer = config.tracer;
  // The model's family opens it (processors, tokenizer, template, positions with the video
  // time index chosen, pad id) from the model parsed once for the run (model_config).
  STOKER_ASSIGN_OR_RETURN(ctx->model, model::open_model(config.model, model_options(config)));
  ctx->media = {.image = ctx->model->image_processor(),
                .video = ctx->model->video_processor(),
                .audio = ctx->model->audio_processor()};
  STOKER_RETURN_IF_ERROR(open_sources(config.data, source_options(config), ctx.get()));
  ctx->budget = std::make_unique<ByteBudget>(config.fetch_bytes_in_flight);
  ctx->max_length = config.max_length;
  if (config.packing.batching != Batching::kFixed) {
    // A sample must fit one pack row / one token budget on its own.
    const std::int64_t cap = config.pack_capacity();
    ctx->max_length = ctx->max_length > 0 ? std::min(ctx->max_length, cap) : cap;
  }
  ctx->truncate = config.truncate;
  ctx->max_media_per_record = config.max_media_per_record;
  ctx->io_delay_hook = config.io_delay_hook;
  return ctx;
}

SourceOptions source_options(const LoaderConfig& config) {
  SourceOptions o;
  o.access = {.media_roots = config.media_roots,
              .trust_media_paths = config.trust_media_paths,
              .allow_buckets = config.allow_buckets};
  o.max_object_bytes = config.max_object_bytes;
  o.max_record_bytes = config.max_record_bytes;
  o.max_manifest_bytes = config.max_manifest_bytes;
  o.io_deadline_ms = config.io_deadline_ms;
  o.io_max_attempts = config.io_max_attempts;
  o.cache_dir = config.cache_dir;
  o.manifest_chunk_bytes = config.manifest_chunk_bytes;
  o.fetch_blocking = config.fetch_blocking;
  o.imds = config.imds;
  return o;
}

namespace {

// The engine's counter tracks; with several ranks in one trace (`stoker serve`) each rank's
// are its own ("... (rank R)").
void trace_counters(Context& ctx, const dataset::RankInfo& rank) {
  obs::Tracer& t = *ctx.tracer;
  const std::string suffix =
      rank.world_size > 1 ? " (rank " + std::to_string(rank.rank) + ")" : std::string();
  ctx.trace_ids.fetch_bytes = t.counter_id("fetch bytes in flight" + suffix);
  ctx.trace_ids.arena_bytes = t.counter_id("arena bytes in use" + suffix);
  ctx.trace_ids.ready_batches = t.counter_id("ready batches" + suffix);
  ctx.trace_ids.in_flight = t.counter_id("samples in flight" + suffix);
  ctx.trace_ids.reorder = t.counter_id("prepared samples waiting" + suffix);
  ctx.budget->trace_to(&t, ctx.trace_ids.fetch_bytes);
}

}  // namespace

Result<std::unique_ptr<Loader>> Loader::create(const LoaderConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  STOKER_ASSIGN_OR_RETURN(impl->rank, dataset::resolve_rank_info(config.rank));
  STOKER_ASSIGN_OR_RETURN(impl->ctx, make_context(config));
  STOKER_ASSIGN_OR_RETURN(impl->plan, mixture_plan(config, *impl->ctx, impl->rank));
  impl->fingerprint = run_fingerprint(config, *impl->ctx,
                                      impl->plan ? impl->plan->config().global_batch : 0);
  if (config.tracer == nullptr && !config.trace_path.empty()) {
    impl->ctx->tracer = std::make_shared<obs::Tracer>(config.trace);
    impl->owns_trace = true;
  }
  if (impl->ctx->tracer != nullptr) trace_counters(*impl->ctx, impl->rank);
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<batch::Arena> arena,
                          batch::Arena::create(arena_options(config)));
  impl->arena = std::move(arena);
  if (config.mode == Mode::kPrefetch && config.prefetch_on_create) {
    // A failure here (e.g. an empty dataset) is left for the first next() to report, as
    // without prefetch_on_create: it retries and returns the same error.
    if (!impl->start_engine().ok()) impl->stop_engine();
  }
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Status Loader::resume(const LoaderState& saved) {
  std::lock_guard lock(impl_->mu);
  if (impl_->started) return invalid_argument("loader: resume() must come before the first next()");
  const LoaderConfig& c = impl_->config;
  const bool fixed = c.packing.batching == Batching::kFixed;
  LoaderState s = saved;
  // The order fingerprint first (issue #28: a state of other data is refused as such, not for
  // a position past this data's end), then the numbers against this data (whatever the options:
  // a forced resume cannot start past the end either), then the packing plan (PACKING.md).
  std::string note;
  if (impl_->plan != nullptr && fixed) return resume_mixture(saved);
  STOKER_RETURN_IF_ERROR(check_fingerprint(s, impl_->fingerprint, c.force_resume, &note));
  STOKER_RETURN_IF_ERROR(check_state_bounds(
      s, {.records = impl_->plan ? impl_->plan->epoch_length() : impl_->ctx->records->size(), .epochs = c.epochs,
          .pack_window = fixed ? 0 : c.packing.window}));
  const std::string force_name = option_name("force_resume=True", "--force-resume");
  if (fixed && s.plan != 0) {
    if (!c.force_resume) {
      return invalid_argument("loader: the state was written with packing or token budgets (packs=" +
                              std::to_string(s.packs) + "); resume with the same options");
    }
    s.packs = 0;  // forced: the packs of a plan this run does not have mean nothing here
    s.plan = 0;
  }
  if (!fixed) {
    const std::uint32_t want = plan_id(c);
    if (s.plan != 0 && s.plan != want) {
      if (!c.force_resume) {
        char ids[64];
        std::snprintf(ids, sizeof ids, "plan %08x, these options give %08x", s.plan, want);
        return invalid_argument(std::string("loader: the state was written with other packing "
                                            "options (") + ids + "): max_tokens, window, format, "
                                "align, seed, max_length, truncation and model must be the same "
                                "(or " + force_name + ")");
      }
      s.packs = 0;
      s.plan = 0;
    }
    const auto window = static_cast<std::uint64_t>(c.packing.window);
    if (s.plan == 0 && s.position % window != 0) {
      if (!c.force_resume) {
        return invalid_argument("loader: a state without packing can resume packing only at the "
                                "start of a window of " + std::to_string(c.packing.window) +
                                " samples (position " + std::to_string(s.position) + "; or " +
                                force_name + ")");
      }
      s.position -= s.position % window;  // the window's start: its samples come again
      note += (note.empty() ? "" : "; ") + std::string("position moved back to ") +
              std::to_string(s.position) + ", the start of this run's planning window";
    }
  }
  impl_->resume_note = std::move(note);
  return impl_->resume_at(s);
}

// A mixture run's state (plan_schedule.h): the spec first — a changed mixture is refused
// naming the change unless allow_spec_change (then the data field is not compared either) —,
// then the rest of the fingerprint, then the plan (global batch, cursors) when the engine starts.
Status Loader::resume_mixture(const LoaderState& saved) {
  const LoaderConfig& c = impl_->config;
  const dataset::Plan& plan = *impl_->plan;
  std::string note;
  Fingerprint now = impl_->fingerprint;
  if (saved.mix.empty()) {
    // The start of the plan (a node server resumes a fresh rank from a zero state): nothing to
    // check; anything else without the plan's cursors cannot be placed in it.
    if (saved.epoch == 0 && saved.position == 0 && saved.packs == 0 && saved.plan == 0) {
      return impl_->resume_at(saved);
    }
    return invalid_argument("resume: the state (epoch " + std::to_string(saved.epoch) + " position " +
                            std::to_string(saved.position) + ") was not written by a mixture run (no mix= field)");
  }
  STOKER_ASSIGN_OR_RETURN(dataset::PlanState ps, decode_mix(saved.mix, saved.position, plan.config().seed));
  if (ps.spec != plan.spec_hash()) {
    char ids[64];
    std::snprintf(ids, sizeof ids, "spec %016llx in the state, %016llx now",
                  static_cast<unsigned long long>(ps.spec), static_cast<unsigned long long>(plan.spec_hash()));
    if (!c.allow_spec_change) {
      return invalid_argument(std::string("resume: the mixture changed since the state was saved (") + ids +
                              ": its sources, their sizes or shares, the mode or the seed differ); resume with "
                              "the same mixture, or pass " +
                              option_name("allow_spec_change=True", "--allow-spec-change") +
                              " to start the new plan at position " + std::to_string(saved.position));
    }
    note = std::string("the mixture changed (") + ids + "): the new plan starts at position " +
           std::to_string(saved.position) + " (" + option_name("allow_spec_change=True", "--allow-spec-change") + ")";
    if (const std::string* d = saved.fingerprint.find("data")) {
      for (auto& [name, value] : now.fields)
        if (name == "data") value = *d;
    }
  }
  if (c.packing.batching == Batching::kFixed) {
    // The plan's own checks (PlanSchedule::make, PlanCursor::resume) run when the engine starts;
    // made here too, so that a state that cannot be placed in this plan is refused by resume()
    // itself — a node server refuses that client's attach instead of failing the rank later.
    const std::uint64_t g = plan.config().global_batch;
    if (ps.global_batch != g || saved.position % g != 0) {
      return invalid_argument("resume: the state was saved with a global batch of " +
                              std::to_string(ps.global_batch) + " (position " + std::to_string(saved.position) +
                              "), this run's is " + std::to_string(g) +
                              " (batch size x world size): an exact resume needs the same global batch");
    }
    if (ps.spec == plan.spec_hash() && ps.cursors.size() != plan.config().sources.size()) {
      return invalid_argument("resume: field 'mix' has " + std::to_string(ps.cursors.size()) +
                              " per-source cursors, this mixture has " +
                              std::to_string(plan.config().sources.size()) + " sources");
    }
  }
  std::string fp_note;
  STOKER_RETURN_IF_ERROR(check_fingerprint(saved, now, c.force_resume, &fp_note));
  if (!fp_note.empty()) note += (note.empty() ? "" : "; ") + fp_note;
  impl_->resume_note = std::move(note);
  return impl_->resume_at(saved);
}

Result<std::optional<Batch>> Loader::next() { return next_impl(nullptr, {}); }

Result<std::optional<Batch>> Loader::next(const std::function<bool()>& interrupted,
                                          std::chrono::milliseconds poll) {
  return next_impl(&interrupted, std::max(poll, std::chrono::milliseconds(1)));
}

Result<std::optional<Batch>> Loader::next_impl(const std::function<bool()>* interrupted,
                                               std::chrono::milliseconds poll) {
  Impl& m = *impl_;
  const std::int64_t t0 = now_ns();
  {
    std::lock_guard lock(m.mu);
    if (m.fatal) return *m.fatal;
    if (m.ended) return std::optional<Batch>();
    if (!m.started) {
      m.started = true;
      m.first_call_ns = t0;
      if (m.ctx->tracer != nullptr) m.ctx->tracer->default_thread_name("next() caller");
      if (Status st = m.start(); !st.ok()) {
        m.fatal = st.error();
        return std::move(st).error();
      }
    }
  }
  std::optional<ReadyBatch> produced = m.produce_one(interrupted, poll);
  const std::int64_t t1 = now_ns();
  m.next_wait.record_ns(t1 - t0);
  if (m.ctx->tracer != nullptr) {
    m.ctx->tracer->span("next", t0, t1, "batches", m.batches);  // m.batches: only this thread writes it
  }
  if (!produced) {  // interrupted: the time waited counts; nothing else changes
    std::lock_guard lock(m.mu);
    m.wait_ns += t1 - t0;
    m.last_ns = t1;
    return cancelled("next() interrupted while waiting for the producer");
  }
  ReadyBatch& rb = *produced;
  Status written = m.report_broken ? ok_status() : m.report.write(rb.failures);
  std::lock_guard lock(m.mu);
  m.wait_ns += t1 - t0;
  m.last_ns = t1;
  m.failed += static_cast<std::int64_t>(rb.failures.size());
  for (const SampleFailure& f : rb.failures) m.failure_kinds.add(f);
  const auto* mix = m.plan ? dynamic_cast<const MixtureRecords*>(m.ctx->records.get()) : nullptr;
  if (mix != nullptr) {
    m.source_failed.resize(mix->leaves(), 0);
    for (const SampleFailure& f : rb.failures) ++m.source_failed[mix->leaf_of(f.sample)];
  }
  if (rb.state_after) m.state = *rb.state_after;
  if (!written.ok()) {
    if (m.config.strict_outputs) {
      rb.fatal = std::move(written).error();
    } else if (!m.report_broken) {
      // A diagnostic output (issue #28): warned once, the run goes on; the failures stay in the
      // summary and stats().
      m.report_broken = true;
      std::fprintf(stderr, "stoker: warning: %s: %s; later failed samples are not in it (%s "
                   "makes this an error)\n",
                   option_name("error_report", "--error-report").c_str(),
                   printable(written.error().to_string()).c_str(),
                   option_name("strict_outputs=True", "--strict-outputs").c_str());
    }
  }
  if (rb.fatal) {
    m.fatal = *rb.fatal;
    return std::move(*rb.fatal);
  }
  if (rb.end) {
    m.ended = true;
    return std::optional<Batch>();
  }
  if (m.first_batch_ns < 0) m.first_batch_ns = t1 - m.first_call_ns;
  ++m.batches;
  m.samples += rb.batch->size();
  if (mix != nullptr) {
    m.source_delivered.resize(mix->leaves(), 0);
    if (const std::uint64_t* ids = rb.batch->as<std::uint64_t>("sample_ids")) {
      for (std::int64_t i = 0; i < rb.batch->size(); ++i) ++m.source_delivered[mix->leaf_of(ids[i])];
    }
  }
  m.tokens.real_tokens += rb.real_tokens;
  m.tokens.computed_tokens += rb.computed_tokens;
  m.tokens.sequences += rb.batch->size();
  if (rb.unit) {
    BatchAccess::set_repeat(*rb.batch, rb.unit->repeat);
    const StepLoad& l = rb.unit->step;
    ++m.tokens.steps;
    m.tokens.repeats += rb.unit->repeat ? 1 : 0;
    m.tokens.sum_max_patches += static_cast<double>(l.max_patches);
    m.tokens.sum_mean_patches += l.mean_patches;
    m.tokens.sum_max_tokens += static_cast<double>(l.max_tokens);
    m.tokens.sum_mean_tokens += l.mean_tokens;
    if (l.mean_patches > 0) {
      m.tokens.worst_patch_ratio = std::max(m.tokens.worst_patch_ratio, l.max_patches / l.mean_patches);
    }
  }
  return std::optional<Batch>(std::move(*rb.batch));
}

LoaderState Loader::state() const {
  std::lock_guard lock(impl_->mu);
  LoaderState s = impl_->state;
  s.fingerprint = impl_->fingerprint;
  return s;
}

std::string Loader::resume_note() const {
  std::lock_guard lock(impl_->mu);
  return impl_->resume_note;
}

std::vector<FailureKind> Loader::failure_kinds(std::size_t n) const {
  std::lock_guard lock(impl_->mu);
  return impl_->failure_kinds.top(n);
}

LoaderStats Loader::stats() const {
  const Impl& m = *impl_;
  LoaderStats s;
  int cpu_threads = 1, emit_threads = 0;
  {
    std::lock_guard lock(m.mu);
    s = m.tokens;
    s.batches = m.batches;
    s.samples = m.samples;
    s.failed = m.failed;
    s.wait_s = m.wait_ns * 1e-9;
    s.elapsed_s = m.started ? (now_ns() - m.first_call_ns) * 1e-9 : 0;
    s.first_batch_s = m.first_batch_ns < 0 ? 0 : m.first_batch_ns * 1e-9;
    if (m.engine) {
      // allocate() populating a block (batch/arena.h) is assembly work, not a wait for space.
      const double populate = std::min(m.arena->populate_s(), m.engine->arena_wait_s());
      s.arena_wait_s = m.engine->arena_wait_s() - populate;
      s.sample_wait_s = m.engine->sample_wait_s();
      s.emit_s = m.engine->emit_s() + populate;
      const QueueDepths d = m.engine->depths();
      s.samples_in_flight = d.in_flight;
      s.prepared_waiting = d.prepared;
    }
    if (m.ring) s.ready_batches = static_cast<std::int64_t>(m.ring->size());
    s.failed_by = m.failure_kinds.by_stage_code();
    if (const auto* mix = m.plan ? dynamic_cast<const MixtureRecords*>(m.ctx->records.get()) : nullptr) {
      std::vector<std::uint64_t> planned(mix->leaves(), 0);
      if (!m.state.mix.empty()) {
        if (auto ps = decode_mix(m.state.mix, m.state.position, 0); ps.ok() && ps->cursors.size() == planned.size())
          planned = ps->cursors;
      } else if (m.plan->config().mode == dataset::PlanMode::kEpochized) {
        // Packing: whole epochs from the plan's counts, then this epoch's positions drawn.
        const std::uint64_t T = m.plan->epoch_length();
        const std::uint64_t pos = std::min(m.state.position, T);
        if (m.counted.size() != planned.size() || m.counted_epoch != m.state.epoch || m.counted_position > pos) {
          m.counted.assign(planned.size(), 0);
          m.counted_epoch = m.state.epoch;
          m.counted_position = 0;
        }
        if (m.counted_position < pos) {
          const dataset::Plan::Layout layout = m.plan->layout(m.state.epoch);
          for (std::uint64_t t = m.counted_position; t < pos; ++t) ++m.counted[m.plan->draw_at(layout, t).first];
          m.counted_position = pos;
        }
        for (std::size_t i = 0; i < planned.size(); ++i)
          planned[i] = m.plan->epoch_counts()[i] * m.state.epoch + m.counted[i];
      }
      for (std::size_t i = 0; i < mix->leaves(); ++i) {
        const dataset::MixtureLeaf& leaf = mix->spec().leaves[i];
        SourceStats st;
        st.name = mix->leaf_name(i);
        st.share = mix->spec().mode == dataset::MixMode::kWeighted ? leaf.weight : leaf.repetitions;
        st.records = mix->leaf_size(i);
        st.first_id = mix->first_id(i);
        st.subflavors = leaf.subflavors;
        st.planned = planned[i];
        st.delivered = i < m.source_delivered.size() ? m.source_delivered[i] : 0;
        st.failed = i < m.source_failed.size() ? m.source_failed[i] : 0;
        s.sources.push_back(std::move(st));
      }
    }
    cpu_threads = m.cpu_threads;
    emit_threads = m.emit_threads;
  }
  const bool serial = m.config.mode == Mode::kSerial;
  const int io = serial ? 1 : m.config.io_threads, cpu = serial ? 1 : cpu_threads;
  const int threads[kNumStages] = {io, io, cpu, emit_threads + 1, 1};
  for (int i = 0; i < kNumStages; ++i) {
    s.stages.push_back({stage_name(i), m.ctx->counters.busy_ns[i].load() * 1e-9,
                        m.ctx->counters.items[i].load(), threads[i],
                        m.ctx->counters.latency[i].snapshot()});
  }
  s.sample_build_s = m.ctx->counters.sample_build_ns.load() * 1e-9;
  s.samples_built = m.ctx->counters.samples_built.load();
  if (m.ctx->model != nullptr) s.chat_template = m.ctx->model->renderer().describe();
  s.next_wait = m.next_wait.snapshot();
  s.arena_peak_bytes = m.arena->peak_in_use();
  s.arena_in_use_bytes = m.arena->in_use();
  s.arena_capacity_bytes = m.arena->capacity();
  s.arena_planned_bytes = m.arena->planned_bytes();
  s.arena_plan = m.arena->describe();
  s.fetch_in_flight_bytes = m.ctx->budget->in_flight();
  s.fetch_peak_bytes = static_cast<std::uint64_t>(m.ctx->budget->peak());
  s.fetch_budget_wait_s = m.ctx->budget->wait_s();
  return s;
}

Result<std::vector<MeasuredRecord>> measure_records(const LoaderConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Context> ctx, make_context(config));
  const std::uint64_t n = ctx->records->size();
  std::vector<MeasuredRecord> out(n);
  STOKER_ASSIGN_OR_RETURN(auto pool, exec::ThreadPool::create({.num_threads = config.threads,
                                                               .name = "stoker-measure"}));
  std::atomic<std::uint64_t> next{0};
  for (int t = 0; t < pool->num_threads(); ++t) {
    (void)pool->submit([&] {
      for (std::uint64_t i = next++; i < n; i = next++) {
        Measured m = measure_sample(*ctx, 0, i, {});
        MeasuredRecord& r = out[i];
        r.sample = i;
        r.tokens = m.failure ? -1 : m.tokens;
        r.patches = m.failure ? 0 : m.rows;
        if (m.failure) {
          r.failure = std::string(failure_stage_name(m.failure->stage)) + ": " + m.failure->reason;
        }
      }
    });
  }
  pool->shutdown(exec::ShutdownMode::kDrain);
  return out;
}

const batch::Arena& Loader::arena() const { return *impl_->arena; }
const dataset::RankInfo& Loader::rank() const { return impl_->rank; }

}  // namespace stoker::pipeline
