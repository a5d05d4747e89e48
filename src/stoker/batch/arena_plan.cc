#include "stoker/batch/arena_plan.h"

#include <algorithm>
#include <cstdio>

namespace stoker::batch {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kHuge = std::uint64_t{2} << 20;

std::uint64_t round_to(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

double mib(std::uint64_t b) { return static_cast<double>(b) / (1 << 20); }

}  // namespace

bool ArenaPlan::add(std::uint64_t batch_bytes) {
  const std::uint64_t b = round_to(batch_bytes == 0 ? 1 : batch_bytes, kPage);
  if (b <= largest) return false;
  largest = b;
  return true;
}

std::uint64_t ArenaPlan::slack() const { return std::max(kHuge, round_to(largest / 2, kHuge)); }

std::uint64_t ArenaPlan::planned() const {
  if (largest == 0) return 0;
  const std::uint64_t want = static_cast<std::uint64_t>(std::max(depth, 1)) * largest + slack();
  return std::min(cap, round_to(want, kHuge));
}

std::uint64_t ArenaPlan::warm_to(std::uint64_t high_water) const {
  if (largest == 0) return high_water;
  // The next block lands above the high water only if one fits there; a smaller one that does
  // is made resident when it is handed out.
  if (high_water + largest > cap) return high_water;
  return std::max(high_water, std::min(planned(), high_water + largest));
}

std::string ArenaPlan::describe(const std::string& depth_why) const {
  char buf[320];
  if (largest == 0) {
    std::snprintf(buf, sizeof buf, "no batch planned yet; cap %.0f MiB (--arena-mb)", mib(cap));
    return buf;
  }
  const std::uint64_t want = static_cast<std::uint64_t>(std::max(depth, 1)) * largest + slack();
  char capped[96] = "";
  if (round_to(want, kHuge) > cap) {
    std::snprintf(capped, sizeof capped, " = %.1f MiB, capped", mib(round_to(want, kHuge)));
  }
  std::snprintf(buf, sizeof buf,
                "planned %.1f MiB: %d batches (%s) x largest %.1f MiB + %.1f MiB slack%s; cap "
                "%.0f MiB (--arena-mb)",
                mib(planned()), depth, depth_why.c_str(), mib(largest), mib(slack()), capped,
                mib(cap));
  return buf;
}

}  // namespace stoker::batch
