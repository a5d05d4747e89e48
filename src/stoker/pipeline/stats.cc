#include "stoker/pipeline/stats.h"

#include <algorithm>
#include <cstdio>

namespace stoker::pipeline {

std::string describe_limiter(const LoaderStats& s) {
  char buf[256];
  if (s.elapsed_s <= 0) return "nothing measured yet";
  // After the first batch (the pipeline's fill is not a steady-state limit).
  const double span = s.elapsed_s - s.first_batch_s;
  const double wait = span > 0 ? (s.wait_s - s.first_batch_s) / span : s.wait_ratio();
  if (wait < 0.02) {
    std::snprintf(buf, sizeof buf,
                  "the trainer: it waits %.2f%% of its time for data (the loader keeps up)",
                  100 * std::max(0.0, wait));
    return buf;
  }
  // The producer's time: waiting for space, waiting for samples, or assembling batches.
  const double total = s.arena_wait_s + s.sample_wait_s + s.emit_s;
  if (total <= 0) return "undetermined (no producer time measured)";
  if (s.arena_wait_s >= s.sample_wait_s && s.arena_wait_s >= s.emit_s) {
    std::snprintf(buf, sizeof buf,
                  "the arena: the producer waited %.2f s (%.0f%% of its time) for space the "
                  "consumer holds (more arena, or release batches sooner)",
                  s.arena_wait_s, 100 * s.arena_wait_s / total);
    return buf;
  }
  if (s.emit_s >= s.sample_wait_s) {
    std::snprintf(buf, sizeof buf,
                  "emit (CPU): %.0f%% of the producer's time goes to decoding images into the "
                  "batch (more threads)", 100 * s.emit_s / total);
    return buf;
  }
  // Samples arrive late: the busiest upstream CPU stage, the byte budget, or the I/O itself.
  const StageStats* busiest = nullptr;
  double busiest_share = 0;
  for (const StageStats& st : s.stages) {
    if (st.name != "read" && st.name != "prepare") continue;
    const double share = st.busy_s / (std::max(1, st.threads) * s.elapsed_s);
    if (busiest == nullptr || share > busiest_share) busiest = &st, busiest_share = share;
  }
  if (busiest != nullptr && busiest_share > 0.6) {
    std::snprintf(buf, sizeof buf,
                  "%s (CPU): the producer waited %.0f%% of its time for samples and %s is %.0f%% "
                  "busy", busiest->name.c_str(), 100 * s.sample_wait_s / total,
                  busiest->name.c_str(), 100 * busiest_share);
    return buf;
  }
  if (s.fetch_budget_wait_s > 0.1 * s.elapsed_s) {
    std::snprintf(buf, sizeof buf,
                  "the fetch byte budget: I/O threads waited %.2f s for it (raise "
                  "fetch_bytes_in_flight)", s.fetch_budget_wait_s);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "media I/O: the producer waited %.0f%% of its time for samples while the CPU "
                "stages were not busy (storage latency or bandwidth)",
                100 * s.sample_wait_s / total);
  return buf;
}

}  // namespace stoker::pipeline
