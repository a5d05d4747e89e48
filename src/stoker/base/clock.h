// Monotonic time for measurements (stage timings, wait ratios, benchmarks).
// Stopwatch is a plain value: not shared between threads.
#pragma once

#include <chrono>
#include <cstdint>

namespace stoker {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(now_ns()) {}
  void reset() { start_ = now_ns(); }
  std::int64_t elapsed_ns() const { return now_ns() - start_; }
  double elapsed_s() const { return static_cast<double>(elapsed_ns()) * 1e-9; }

 private:
  std::int64_t start_;
};

}  // namespace stoker
