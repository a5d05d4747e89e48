#include "stoker/batch/pack_plan.h"

#include <algorithm>
#include <set>
#include <utility>
#include <numeric>

#include "stoker/base/result.h"

namespace stoker::batch {
namespace {

// Positions of `items` by tokens, longest first; equal lengths in window order.
std::vector<std::uint32_t> longest_first(std::span<const PlanItem> items) {
  std::vector<std::uint32_t> order(items.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (items[a].tokens != items[b].tokens) return items[a].tokens > items[b].tokens;
    return items[a].index < items[b].index;
  });
  return order;
}

// Padded batches: runs of the longest-first order, each as long as count × its first (longest)
// item stays within the budget — neighbours in that order have similar lengths, so little of
// each batch is padding.
std::vector<std::vector<std::uint32_t>> padded_runs(std::span<const PlanItem> items,
                                                    std::int64_t capacity) {
  std::vector<std::vector<std::uint32_t>> runs;
  std::int64_t longest = 0;
  for (std::uint32_t i : longest_first(items)) {
    if (runs.empty() ||
        static_cast<std::int64_t>(runs.back().size() + 1) * longest > capacity) {
      runs.emplace_back();
      longest = items[i].tokens;
    }
    runs.back().push_back(i);
  }
  return runs;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> best_fit_decreasing(std::span<const PlanItem> items,
                                                            std::int64_t capacity) {
  std::vector<std::vector<std::uint32_t>> bins;
  // Open bins as (remaining space, bin): lower_bound({len, 0}) is the fullest bin that still
  // fits the item — best fit — and among equally full ones the oldest, so the plan depends on
  // the lengths and their window order only.
  std::set<std::pair<std::int64_t, std::uint32_t>> open;
  for (std::uint32_t i : longest_first(items)) {
    const std::int64_t len = items[i].tokens;
    STOKER_CHECK(len > 0 && len <= capacity, "pack plan: a sample longer than the capacity");
    auto it = open.lower_bound({len, 0});
    if (it == open.end()) {
      bins.push_back({i});
      open.emplace(capacity - len, static_cast<std::uint32_t>(bins.size() - 1));
      continue;
    }
    const auto [space, bin] = *it;
    open.erase(it);
    bins[bin].push_back(i);
    if (space > len) open.emplace(space - len, bin);
  }
  return bins;
}

std::vector<Unit> plan_units(std::span<const PlanItem> items, const PlanOptions& options) {
  std::vector<std::vector<std::uint32_t>> groups =
      options.kind == UnitKind::kPack ? best_fit_decreasing(items, options.capacity)
                                      : padded_runs(items, options.capacity);
  std::vector<Unit> units;
  units.reserve(groups.size());
  for (std::vector<std::uint32_t>& g : groups) {
    Unit u;
    for (std::uint32_t i : g) {
      const PlanItem& it = items[i];
      u.members.push_back(it.index);
      u.tokens += it.tokens;
      u.longest = std::max(u.longest, it.tokens);
      u.patches += it.patches;
    }
    std::sort(u.members.begin(), u.members.end());
    u.computed = options.kind == UnitKind::kPack
                     ? options.capacity
                     : static_cast<std::int64_t>(u.members.size()) * u.longest;
    units.push_back(std::move(u));
  }
  // Canonical order: vision load, then tokens, then the first member (unique: a total order).
  auto heavier = [](const Unit& a, const Unit& b) {
    if (a.patches != b.patches) return a.patches > b.patches;
    if (a.tokens != b.tokens) return a.tokens > b.tokens;
    return a.members.front() < b.members.front();
  };
  std::sort(units.begin(), units.end(), heavier);
  if (!options.heaviest_first) std::reverse(units.begin(), units.end());
  return units;
}

}  // namespace stoker::batch
