#include "stoker/exec/backoff.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "stoker/base/mix.h"

namespace stoker::exec {

Status BackoffOptions::validate() const {
  if (initial_delay.count() < 0) return invalid_argument("backoff: initial_delay must be >= 0");
  if (max_delay < initial_delay) {
    return invalid_argument("backoff: max_delay must be >= initial_delay");
  }
  if (!(multiplier >= 1.0) || !std::isfinite(multiplier)) {
    return invalid_argument("backoff: multiplier must be a finite number >= 1");
  }
  if (max_attempts < 0) {
    return invalid_argument("backoff: max_attempts must be >= 0 (tries in total; 0: no limit), got " +
                            std::to_string(max_attempts));
  }
  return ok_status();
}

Backoff::Backoff(const BackoffOptions& options, std::optional<Clock::time_point> deadline)
    : options_(options), deadline_(deadline), rng_state_(mix64(options.seed ^ 0x6a09e667f3bcc909ULL)) {
  Status valid = options.validate();
  STOKER_CHECK(valid.ok(), valid.ok() ? "" : valid.error().to_string());
}

std::uint64_t Backoff::next_random() {
  rng_state_ += 0x9e3779b97f4a7c15ULL;
  return mix64(rng_state_);
}

std::optional<std::chrono::nanoseconds> Backoff::next_delay(Clock::time_point now) {
  ++attempts_;
  deadline_hit_ = false;
  if (options_.max_attempts > 0 && attempts_ >= options_.max_attempts) return std::nullopt;
  // Window for retry k (k = attempts_ - 1): initial * multiplier^k, capped. Computed in double so
  // a large k saturates at max_delay instead of overflowing.
  const double cap = static_cast<double>(options_.max_delay.count());
  double window = static_cast<double>(options_.initial_delay.count()) *
                  std::pow(options_.multiplier, static_cast<double>(attempts_ - 1));
  window = std::min(window, cap);
  auto window_ns = static_cast<std::uint64_t>(window);
  if (deadline_) {
    if (now >= *deadline_) {
      deadline_hit_ = true;
      return std::nullopt;
    }
    auto left = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(*deadline_ - now).count());
    window_ns = std::min(window_ns, left);
  }
  // Full jitter: uniform in [0, window] via a 64x64->128 multiply (no modulo bias worth naming).
  const auto draw = static_cast<std::uint64_t>(
      (static_cast<unsigned __int128>(next_random()) * (static_cast<unsigned __int128>(window_ns) + 1)) >> 64);
  return std::chrono::nanoseconds(static_cast<std::int64_t>(draw));
}

Error Backoff::give_up_reason() const {
  if (deadline_hit_) {
    return deadline_exceeded("deadline passed after " + std::to_string(attempts_) + " attempt(s)");
  }
  return resource_exhausted("gave up after " + std::to_string(attempts_) + " attempt(s)");
}

bool sleep_for(std::chrono::nanoseconds delay, std::stop_token stop) {
  if (!stop.stop_possible()) {
    std::this_thread::sleep_for(delay);
    return true;
  }
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  // Nothing ever notifies `cv` except the stop request, so this is an interruptible sleep.
  cv.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace stoker::exec
