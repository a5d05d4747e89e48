// Backoff: delays between retries of one failing operation — exponential growth with "full
// jitter" (AWS architecture blog, 2015: delay = uniform(0, min(max_delay, initial * multiplier^k))),
// a bounded number of attempts and/or a deadline that no delay may cross (a retry window that
// is a span of time, not a count: max_attempts = 0).
// Deterministic: the jitter comes from a seeded splitmix64 stream, so a test (or a replayed run)
// sees the same delays; give each request its own seed (e.g. mix the base seed with a request id)
// so that clients failing together do not retry together.
// One Backoff per operation; plain value, not shared between threads. Errors: validate() only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>

#include "stoker/base/result.h"

namespace stoker::exec {

struct BackoffOptions {
  std::chrono::nanoseconds initial_delay = std::chrono::milliseconds(50);
  std::chrono::nanoseconds max_delay = std::chrono::seconds(5);
  double multiplier = 2.0;
  int max_attempts = 5;  // tries in total, the first included; 1 = never retry; 0 = no limit
                         // (then only the deadline ends the retries)
  std::uint64_t seed = 0;

  Status validate() const;
};

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;

  // `options` must be valid (checked: a bad one is a programmer bug here; validate() configs at
  // the edge). Without a deadline only max_attempts bounds the retries.
  explicit Backoff(const BackoffOptions& options,
                   std::optional<Clock::time_point> deadline = std::nullopt);

  // Call after a failed attempt. Returns how long to wait before the next one, or nullopt to give
  // up: attempts exhausted, or the deadline has passed. Near the deadline the jitter window is cut
  // to the time that is left, so a delay never ends after the deadline.
  std::optional<std::chrono::nanoseconds> next_delay(Clock::time_point now = Clock::now());

  // Why the last next_delay() gave up: ResourceExhausted (attempts) or DeadlineExceeded.
  // Meaningful only after it returned nullopt.
  Error give_up_reason() const;

  int attempts_made() const { return attempts_; }  // failed attempts reported so far

 private:
  std::uint64_t next_random();

  BackoffOptions options_;
  std::optional<Clock::time_point> deadline_;
  std::uint64_t rng_state_;
  int attempts_ = 0;
  bool deadline_hit_ = false;
};

// Sleeps for `delay` unless `stop` fires first. False when stopped.
bool sleep_for(std::chrono::nanoseconds delay, std::stop_token stop = {});

}  // namespace stoker::exec
