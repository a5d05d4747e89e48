#include "stoker/pipeline/metrics.h"

namespace stoker::pipeline {
namespace {

obs::Labels with(const obs::Labels& base, std::initializer_list<std::pair<std::string, std::string>> more) {
  obs::Labels out = base;
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

}  // namespace

void add_loader_metrics(obs::MetricText& m, const LoaderStats& s, const obs::Labels& labels) {
  const auto d = [](auto v) { return static_cast<double>(v); };
  m.counter("stoker_batches_total", "Batches delivered by next().", labels, d(s.batches));
  m.counter("stoker_samples_total", "Samples delivered in batches.", labels, d(s.samples));
  m.gauge("stoker_samples_per_second", "Samples delivered per second since the first next().",
          labels, s.elapsed_s > 0 ? d(s.samples) / s.elapsed_s : 0.0);
  m.gauge("stoker_wait_ratio",
          "Share of the consumer's time blocked in next() since its first call (1: the consumer "
          "only waited; near 0: the loader keeps up).",
          labels, s.wait_ratio());
  m.counter("stoker_wait_seconds_total", "Consumer time blocked in next().", labels, s.wait_s);
  m.gauge("stoker_elapsed_seconds", "Seconds since the first next().", labels, s.elapsed_s);
  m.histogram("stoker_next_wait_seconds", "Time each next() call blocked.", labels, s.next_wait);
  for (const StageStats& st : s.stages) {
    const obs::Labels l = with(labels, {{"stage", st.name}});
    m.counter("stoker_stage_busy_seconds_total",
              "Wall time inside the stage, summed over its threads.", l, st.busy_s);
    m.counter("stoker_stage_items_total",
              "Items through the stage (read/fetch/prepare: samples; emit: images; assemble: "
              "batches).", l, d(st.items));
    m.gauge("stoker_stage_threads", "Threads that can work on the stage.", l, d(st.threads));
    m.gauge("stoker_stage_utilisation",
            "Busy seconds / (threads x elapsed seconds) since the first next().", l,
            s.elapsed_s > 0 && st.threads > 0 ? st.busy_s / (st.threads * s.elapsed_s) : 0.0);
    m.histogram("stoker_stage_latency_seconds", "Time one item spent in the stage.", l,
                st.latency);
  }
  m.counter("stoker_samples_failed_total", "Samples that failed, reported and skipped.", labels,
            d(s.failed));
  for (const auto& [key, n] : s.failed_by) {
    m.counter("stoker_samples_failed_by_code_total",
              "Failed samples by the stage that failed them and the error code.",
              with(labels, {{"stage", std::string(failure_stage_name(key.first))},
                           {"code", std::string(error_code_name(key.second))}}),
              d(n));
  }
  for (std::size_t i = 0; i < s.sources.size(); ++i) {
    const obs::Labels l = with(labels, {{"source", std::to_string(i)}});
    const bool first = i == 0;  // HELP once per metric
    m.counter("stoker_source_planned_total",
              first ? "A mixture source's samples in the job's global plan so far (all ranks)." : "", l,
              d(s.sources[i].planned));
    m.counter("stoker_source_delivered_total", first ? "A mixture source's samples this rank delivered." : "", l,
              d(s.sources[i].delivered));
    m.counter("stoker_source_failed_total", first ? "A mixture source's samples that failed on this rank." : "", l,
              d(s.sources[i].failed));
  }
  m.counter("stoker_producer_wait_seconds_total",
            "Producer time waiting: for arena space (the consumer holds batches) or for the next "
            "prepared sample.", with(labels, {{"for", "arena"}}), s.arena_wait_s);
  m.counter("stoker_producer_wait_seconds_total", "", with(labels, {{"for", "sample"}}),
            s.sample_wait_s);
  m.counter("stoker_fetch_budget_wait_seconds_total",
            "I/O thread time blocked on the fetch byte budget (summed).", labels,
            s.fetch_budget_wait_s);
  m.gauge("stoker_arena_bytes_in_use", "Arena bytes held by batches now.", labels,
          d(s.arena_in_use_bytes));
  m.gauge("stoker_arena_bytes_peak", "Arena bytes in use, peak.", labels, d(s.arena_peak_bytes));
  m.gauge("stoker_arena_bytes_capacity", "Arena cap (address space; the memory bound).", labels,
          d(s.arena_capacity_bytes));
  m.gauge("stoker_arena_bytes_planned",
          "Arena size the run plans to use: (prefetch + 2) x the largest batch + slack, capped.",
          labels, d(s.arena_planned_bytes));
  m.gauge("stoker_fetch_bytes_in_flight", "Encoded media bytes fetched or being fetched and not "
          "yet prepared (the fetch byte budget's use).", labels, d(s.fetch_in_flight_bytes));
  m.gauge("stoker_fetch_bytes_in_flight_peak", "Fetch bytes in flight, peak.", labels,
          d(s.fetch_peak_bytes));
  m.gauge("stoker_ready_batches", "Batches ready in the prefetch ring.", labels,
          d(s.ready_batches));
  m.gauge("stoker_samples_in_flight", "Samples submitted and not yet taken in order.", labels,
          d(s.samples_in_flight));
  m.gauge("stoker_prepared_samples_waiting", "Prepared samples waiting in the reorder buffer.",
          labels, d(s.prepared_waiting));
}

}  // namespace stoker::pipeline
