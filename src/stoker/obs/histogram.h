// Histogram: latency counts in fixed buckets (seconds, 50 µs .. 10 s, then +Inf), recorded with
// relaxed atomics from any thread (no lock), read as a HistogramSnapshot — the shape Prometheus
// histograms take (obs/prometheus.h) and the report plots. Thread-safe; never blocks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace stoker::obs {

// Upper bounds of the finite buckets, in seconds (Prometheus `le`); one more bucket is +Inf.
inline constexpr std::array<double, 17> kLatencyBounds = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
    50e-3, 100e-3, 250e-3, 500e-3, 1,    2.5,    5,    10};

struct HistogramSnapshot {
  std::vector<double> bounds;         // finite upper bounds, seconds
  std::vector<std::int64_t> counts;   // per bucket, NOT cumulative; bounds.size() + 1 (+Inf last)
  double sum_s = 0;
  std::int64_t count = 0;
  // The upper bound of the bucket holding quantile q (0 when empty; +Inf bucket: the last bound).
  double quantile_bound(double q) const;
};

class Histogram {
 public:
  void record_ns(std::int64_t ns) {
    std::size_t i = 0;
    const double s = static_cast<double>(ns) * 1e-9;
    while (i < kLatencyBounds.size() && s > kLatencyBounds[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  }
  HistogramSnapshot snapshot() const;

 private:
  std::atomic<std::int64_t> counts_[kLatencyBounds.size() + 1] = {};
  std::atomic<std::int64_t> sum_ns_{0};
};

}  // namespace stoker::obs
