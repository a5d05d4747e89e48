// Rng: the synthetic-data generator's own PRNG (splitmix64 state, no std:: distributions) so the
// same seed yields the same bytes with any standard library, compiler or platform.
// `fork(tag)` derives an independent stream for a sub-task (one image, one record) so work can
// run on any thread in any order and still produce identical output. Plain value; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "stoker/base/mix.h"

namespace stoker::synth {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(mix64(seed ^ 0x5851f42d4c957f2dULL)) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform in [0, n) (n > 0); multiply-shift, bias below 2^-32 for the n we use.
  std::uint32_t below(std::uint32_t n) {
    return static_cast<std::uint32_t>(((next() >> 32) * std::uint64_t{n}) >> 32);
  }
  // Uniform integer in [lo, hi] (inclusive).
  int range(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::uint32_t>(hi - lo + 1))); }
  // Uniform double in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool chance(double p) { return uniform() < p; }

  template <typename T>
  const T& pick(std::span<const T> items) { return items[below(static_cast<std::uint32_t>(items.size()))]; }
  template <typename T, std::size_t N>
  const T& pick(const T (&items)[N]) { return items[below(static_cast<std::uint32_t>(N))]; }

  // Index drawn with the given non-negative weights (at least one positive).
  std::size_t weighted(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }

  // An independent stream for sub-task `tag`; does not advance this one.
  Rng fork(std::uint64_t tag) const { return Rng(mix64(state_ ^ mix64(tag + 0x632be59bd9b4e019ULL))); }

  // Fisher–Yates.
  template <typename T>
  void shuffle(std::span<T> items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      std::size_t j = below(static_cast<std::uint32_t>(i));
      T tmp = items[i - 1];
      items[i - 1] = items[j];
      items[j] = tmp;
    }
  }

 private:
  std::uint64_t state_;
};

}  // namespace stoker::synth
