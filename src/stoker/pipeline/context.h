// What every stage of the engine shares: the Context (the model — processors, tokenizer, template,
// positions — the record
// source, the fetcher and its byte budget, limits, tracing, stage counters) — built once per
// Loader (make_context, loader.h), immutable after that and shared by all threads (the counters
// are atomics) — and the Item, one position of a rank's stream as the schedule hands it out.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/dataset/record_source.h"
#include "stoker/image/processor.h"
#include "stoker/model/family.h"
#include "stoker/obs/histogram.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/failure.h"
#include "stoker/pipeline/fetcher.h"
#include "stoker/pipeline/media.h"

namespace stoker::pipeline {

struct UnitInfo;  // source.h
struct Item;

// The engine's stages as timed (StageCounters, LoaderStats::stages); a failure names its own
// FailureStage (failure.h).
enum Stage { kRead, kFetch, kPrepare, kEmit, kAssemble, kNumStages };
const char* stage_name(int stage);

// Per stage: busy time, items, and each item's latency (the Prometheus histograms).
struct StageCounters {
  std::atomic<std::int64_t> busy_ns[kNumStages] = {};
  std::atomic<std::int64_t> items[kNumStages] = {};
  obs::Histogram latency[kNumStages];
  // `n` items done together in `ns` (remote samples landing in one call): one latency record.
  void add(int stage, std::int64_t ns, std::int64_t n = 1) {
    busy_ns[stage].fetch_add(ns, std::memory_order_relaxed);
    items[stage].fetch_add(n, std::memory_order_relaxed);
    latency[stage].record_ns(ns);
  }
  // An item whose latency is not busy time (an asynchronous fetch waits on the network).
  void add_waited(int stage, std::int64_t ns) {
    items[stage].fetch_add(1, std::memory_order_relaxed);
    latency[stage].record_ns(ns);
  }
  // Within prepare: one sample built from its record (chat template, tokenisation, labels).
  std::atomic<std::int64_t> sample_build_ns = 0, samples_built = 0;
  void add_sample_build(std::int64_t ns) {
    sample_build_ns.fetch_add(ns, std::memory_order_relaxed);
    samples_built.fetch_add(1, std::memory_order_relaxed);
  }
};

// The counter tracks the engine records when tracing (obs::Tracer::counter_id; -1: none).
struct TraceCounterIds {
  int fetch_bytes = -1;     // media bytes in flight (the fetch byte budget)
  int arena_bytes = -1;     // arena bytes in use
  int ready_batches = -1;   // batches in the prefetch ring
  int in_flight = -1;       // samples submitted and not yet taken in order
  int reorder = -1;         // prepared samples waiting in the reorder buffer
};

struct Context {
  // Tracing (obs/trace.h): null when off. First member, so it outlives the budget and the
  // fetcher that record to it; shared, since a batch (which may outlive the loader) records the
  // arena counter when it is released.
  std::shared_ptr<obs::Tracer> tracer;
  TraceCounterIds trace_ids;
  // The tracer when the item's per-sample spans are kept (TraceOptions::sample_every), else null.
  obs::Tracer* trace_for(const Item& item) const;
  // The model, from its family (model/family.h): processors, tokenizer, template renderer and
  // placeholder expansion, position rule, pad id. The engine names no family.
  std::unique_ptr<model::Model> model;
  MediaEnv media;  // what the media kinds plan and produce with: the model's processors
  // The records (dataset/record_source.h): their count, each one's text, origin (the name errors
  // give its file and its line) and the context its media references resolve in (the trust
  // boundary). JSONL manifests today (open_sources, store_fetcher.h).
  std::unique_ptr<dataset::RecordSource> records;
  // Before the fetcher: a remote fetcher's pending reads complete (Cancelled) when it is
  // destroyed, and their leases go back to a budget that must still exist.
  std::unique_ptr<ByteBudget> budget;
  std::unique_ptr<Fetcher> fetcher;
  std::int64_t max_length = 0;
  bool truncate = false;  // over max_length: whole turns cut (text::Overflow::kTruncateTurns)
  std::int64_t max_media_per_record = 1024;  // LoaderConfig::max_media_per_record (read stage)
  std::function<void(std::uint64_t, int)> io_delay_hook;
  mutable StageCounters counters;
};

// One position of this rank's stream.
struct Item {
  std::uint64_t seq = 0;     // 0, 1, 2, ... over the whole stream (all epochs)
  std::uint64_t epoch = 0;
  std::uint64_t k = 0;       // index in this rank's shard of the epoch
  std::uint64_t sample = 0;  // global record id
  bool last_of_epoch = false;
  // The loader state once this item is consumed: (epoch + 1, 0) after an epoch's last item.
  std::uint64_t next_epoch = 0, next_position = 0;
  // Items of different groups never share a batch (PlanSchedule: the global step, so a failed
  // sample leaves its step's batch short instead of pulling in the next step's samples).
  std::uint64_t group = 0;
  // PlanSchedule: the mixture state once this item is consumed (LoaderState::mix).
  std::shared_ptr<const std::string> mix_after;
  // Packing / token budgets (PackSchedule): the unit this item belongs to, its place in it, and
  // what measuring found (prepare must find the same, or the sample fails at "plan").
  std::shared_ptr<const UnitInfo> unit;
  std::uint32_t unit_index = 0, unit_size = 0;
  std::int64_t planned_tokens = -1, planned_rows = -1;
  // A failure met before the item was read (an outage while measuring the plan): delivered as
  // is, so the engine stops on it in order.
  std::optional<SampleFailure> preset;
};

inline obs::Tracer* Context::trace_for(const Item& item) const {
  return tracer != nullptr && tracer->keeps(item.seq) ? tracer.get() : nullptr;
}

}  // namespace stoker::pipeline
