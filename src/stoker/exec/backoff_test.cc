#include "stoker/exec/backoff.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace stoker::exec {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Clock = std::chrono::steady_clock;

std::vector<std::int64_t> all_delays(const BackoffOptions& o) {
  Backoff b(o);
  std::vector<std::int64_t> out;
  while (auto d = b.next_delay()) out.push_back(d->count());
  return out;
}

TEST(BackoffTest, SameSeedSameDelaysOtherSeedOtherDelays) {
  BackoffOptions o{.max_attempts = 8, .seed = 11};
  EXPECT_EQ(all_delays(o), all_delays(o));
  BackoffOptions other = o;
  other.seed = 12;
  EXPECT_NE(all_delays(o), all_delays(other));
}

TEST(BackoffTest, BoundedAttempts) {
  BackoffOptions o{.max_attempts = 4};
  Backoff b(o);
  int retries = 0;
  while (b.next_delay()) ++retries;
  EXPECT_EQ(retries, 3);  // 4 tries in total: the first plus 3 retries
  EXPECT_EQ(b.give_up_reason().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(all_delays({.max_attempts = 1}).size(), 0u);
}

TEST(BackoffTest, DelaysStayInsideTheExponentialWindowAndCap) {
  const BackoffOptions base{.initial_delay = milliseconds(10), .max_delay = milliseconds(100),
                            .multiplier = 2.0, .max_attempts = 12};
  // windows: 10, 20, 40, 80, 100, 100, ... ms
  std::vector<std::int64_t> max_seen(11, 0);
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    BackoffOptions o = base;
    o.seed = seed;
    auto d = all_delays(o);
    ASSERT_EQ(d.size(), 11u);
    for (std::size_t k = 0; k < d.size(); ++k) {
      const std::int64_t window = std::min<std::int64_t>(10'000'000LL << k, 100'000'000LL);
      ASSERT_GE(d[k], 0);
      ASSERT_LE(d[k], window) << "retry " << k << " seed " << seed;
      max_seen[k] = std::max(max_seen[k], d[k]);
    }
  }
  // Full jitter uses the whole window: the largest of 2000 draws is near its top.
  for (std::size_t k = 0; k < max_seen.size(); ++k) {
    const std::int64_t window = std::min<std::int64_t>(10'000'000LL << k, 100'000'000LL);
    EXPECT_GT(max_seen[k], window * 95 / 100) << "retry " << k;
  }
}

TEST(BackoffTest, FullJitterMeanIsHalfTheWindow) {
  double sum = 0;
  constexpr int kDraws = 20000;
  for (int seed = 0; seed < kDraws; ++seed) {
    Backoff b({.initial_delay = milliseconds(100), .max_delay = milliseconds(100),
               .max_attempts = 2, .seed = static_cast<std::uint64_t>(seed)});
    sum += static_cast<double>(b.next_delay()->count());
  }
  const double mean_ms = sum / kDraws / 1e6;
  EXPECT_NEAR(mean_ms, 50.0, 1.5);  // sd of the mean ~0.2 ms
}

TEST(BackoffTest, NeverSleepsPastTheDeadline) {
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = t0 + milliseconds(30);
  Backoff b({.initial_delay = milliseconds(20), .max_delay = milliseconds(1000),
             .max_attempts = 100, .seed = 3},
            deadline);
  Clock::time_point now = t0;
  int retries = 0;
  while (auto d = b.next_delay(now)) {
    now += *d;
    ASSERT_LE(now, deadline);
    // The retry itself takes time: advance a little past the sleep.
    now += milliseconds(2);
    ++retries;
  }
  EXPECT_GT(retries, 0);
  EXPECT_EQ(b.give_up_reason().code(), ErrorCode::kDeadlineExceeded);
  EXPECT_FALSE(Backoff({}, t0).next_delay(t0 + milliseconds(1)).has_value());
}

// The retry window is a span of time: with no attempt limit, retries go on (capped delays)
// until the deadline, however many that takes — 8 attempts used to end a 120 s window in ~6 s.
TEST(BackoffTest, NoAttemptLimitRetriesUntilTheDeadline) {
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = t0 + std::chrono::seconds(120);
  Backoff b({.initial_delay = milliseconds(100), .max_delay = milliseconds(5000),
             .max_attempts = 0, .seed = 5},
            deadline);
  Clock::time_point now = t0;
  int retries = 0;
  while (auto d = b.next_delay(now)) {
    ASSERT_LE(*d, milliseconds(5000));
    now += *d + milliseconds(1);  // a refused connection fails at once
    ++retries;
  }
  EXPECT_EQ(b.give_up_reason().code(), ErrorCode::kDeadlineExceeded);
  EXPECT_GE(now, deadline - milliseconds(5001));  // used (nearly) the whole window
  EXPECT_GT(retries, 30);  // full jitter averages half the 5 s cap: ~48 retries in 120 s
}

TEST(BackoffTest, ValidateRejectsNonsense) {
  EXPECT_FALSE((BackoffOptions{.max_attempts = -1}).validate().ok());
  EXPECT_TRUE((BackoffOptions{.max_attempts = 0}).validate().ok());  // no limit: deadline only
  EXPECT_FALSE((BackoffOptions{.multiplier = 0.5}).validate().ok());
  EXPECT_FALSE((BackoffOptions{.initial_delay = milliseconds(10), .max_delay = milliseconds(1)})
                   .validate()
                   .ok());
  EXPECT_TRUE(BackoffOptions{}.validate().ok());
}

TEST(BackoffTest, SleepForReturnsEarlyWhenStopped) {
  std::stop_source stop;
  bool completed = true;
  std::thread sleeper([&] { completed = sleep_for(std::chrono::seconds(60), stop.get_token()); });
  stop.request_stop();
  sleeper.join();  // would take a minute if the sleep ignored the token
  EXPECT_FALSE(completed);
  EXPECT_TRUE(sleep_for(milliseconds(1)));
}

}  // namespace
}  // namespace stoker::exec
