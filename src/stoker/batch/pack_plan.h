// Token-budget planning of one window of samples into units — the rows a trainer computes:
// packs (whole samples concatenated into one row of at most `capacity` tokens, best-fit
// decreasing) or padded batches (samples of similar length, batch size × longest ≤ capacity).
// Then the window's units in their canonical order: by vision load (patches, then tokens), so
// that any `world` consecutive units — one global data-parallel step — carry similar loads, for
// every world size. Lengths are exact (from image headers and the tokenizer, never decoded).
// Pure functions on plain values; deterministic (ties broken by window index); thread-safe.
// A sample longer than the capacity is the caller's bug (it aborts): the engine drops or
// truncates such samples before planning.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stoker::batch {

// One sample of the window that can be planned.
struct PlanItem {
  std::uint32_t index = 0;   // its place in the window (global order); ties break on it
  std::int64_t tokens = 0;   // row tokens it takes (aligned length for Megatron sub-sequences)
  std::int64_t patches = 0;  // vision patches (pixel_values rows): the ViT's load
};

enum class UnitKind {
  kPack,          // one row [1, Σ tokens ≤ capacity]: best-fit decreasing
  kPaddedBudget,  // a padded batch [B, longest] with B · longest ≤ capacity
};

struct PlanOptions {
  UnitKind kind = UnitKind::kPack;
  std::int64_t capacity = 8192;
  // Canonical order: heaviest unit first (true) or last. The engine alternates per window so
  // that a step straddling two windows meets units of similar load (light after light).
  bool heaviest_first = true;
};

struct Unit {
  std::vector<std::uint32_t> members;  // window indices, ascending (the epoch order)
  std::int64_t tokens = 0;             // Σ members' tokens
  std::int64_t longest = 0;            // the longest member
  std::int64_t patches = 0;            // Σ members' patches
  // Tokens the unit costs a trainer: `capacity` for a pack (its fixed row), members × longest
  // for a padded batch.
  std::int64_t computed = 0;
};

// The window's units in canonical order. Every item lands in exactly one unit.
std::vector<Unit> plan_units(std::span<const PlanItem> items, const PlanOptions& options);

// Best-fit decreasing alone: bins (item positions in `items`) in order of opening.
std::vector<std::vector<std::uint32_t>> best_fit_decreasing(std::span<const PlanItem> items,
                                                            std::int64_t capacity);

}  // namespace stoker::batch
