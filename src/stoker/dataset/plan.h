// The global plan: which sample of which source every position of the run reads — the only
// source of order, a pure function of (mixture, source sizes, seed, geometry), independent of
// ranks, threads and workers. Randomness is counter-based: every draw is a hash of (seed,
// stream, counter) (base/mix.h), never a generator's running state.
//
// Epochized (default; Energon's blend_epochized, MDS `repeat`): source s contributes
// n_s = floor(r_s · N_s) samples per epoch without replacement — floor(r_s) full passes (each a
// rotation of the source, so block boundaries move between passes) plus n_s mod N_s samples of
// one more pass, chosen by the seeded hash as whole blocks. The epoch (T = Σ n_s positions) is a
// two-level shuffle: blocks of `block` consecutive draws of one source (read locality: adjacent
// samples of a shard) permuted by a keyed bijection, then positions permuted inside each window
// of `window_blocks` blocks. Any position maps to its sample in O(log S) after an O(S) per-epoch
// layout; nothing the size of the dataset is materialised. Epochs follow each other without gap.
//
// Weighted (Energon's blend): position k draws its source from R(seed, k) in proportion to the
// weights; source s's c-th draw is position c mod N_s of its (c div N_s)-th permutation (a keyed
// Feistel bijection, dataset/order.h). Per-source cursors (draws so far) are the state.
//
// Steps: global step t is positions [tG, (t+1)G); rank r of W takes the contiguous slice
// [tG + rG/W, tG + (r+1)G/W) (W must divide G), so every rank has the same number of steps and
// the concatenation of the ranks' slices is the world-1 stream. PlanState (a few hundred bytes of
// text) resumes exactly at any world size for the same G; a different mixture, seed, geometry
// or source size is refused unless explicitly allowed (then the new plan starts at the saved
// position). Plan is immutable and thread-safe; a PlanCursor belongs to one thread.
// Errors: InvalidArgument (config, world size, malformed or foreign state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/order.h"

namespace stoker::dataset {

enum class PlanMode { kEpochized, kWeighted };

struct PlanSource {
  std::uint64_t samples = 0;  // N_s
  double weight = 1;          // kWeighted (relative)
  double repetitions = 1;     // kEpochized (fractions allowed)
};

struct PlanConfig {
  PlanMode mode = PlanMode::kEpochized;
  std::uint64_t seed = 0;
  std::vector<PlanSource> sources;
  std::uint64_t global_batch = 1;    // G: positions per global step
  std::uint32_t block = 64;          // consecutive draws kept together (epochized)
  std::uint32_t window_blocks = 16;  // blocks shuffled together (epochized)
  std::uint64_t mixture_hash = 0;    // MixtureSpec::hash (0 when there is no spec)
  Status validate() const;
};

struct PlanItem {
  std::uint64_t position = 0;
  std::uint32_t source = 0;
  std::uint64_t sample = 0;  // index within its source
  std::uint64_t epoch = 0;   // epochized: the epoch; weighted: the source's pass
  bool operator==(const PlanItem&) const = default;
};

class Plan {
 public:
  static Result<Plan> create(PlanConfig config);
  const PlanConfig& config() const { return c_; }
  // What a saved state must match: mode, seed, geometry, every source's size and share, the
  // mixture hash. (The global batch is checked on its own.)
  std::uint64_t spec_hash() const { return spec_; }
  // Epochized: floor(r·N) per source, and their sum (the epoch's length).
  const std::vector<std::uint64_t>& epoch_counts() const { return n_; }
  std::uint64_t epoch_length() const { return total_; }
  // Global steps covering `epochs` epochs (epochized: ceil(epochs·T / G); weighted: of Σ N_s).
  std::uint64_t steps_for_epochs(std::uint64_t epochs) const;

  // Epochized: the item at a global position (recomputes the epoch's layout: use a PlanCursor
  // for streams).
  PlanItem at(std::uint64_t position) const;
  // Weighted: the source drawn at `position`, and a source's c-th sample.
  std::uint32_t source_at(std::uint64_t position) const;
  std::uint64_t weighted_sample(std::uint32_t source, std::uint64_t draw) const;

  // The per-epoch layout of the epochized shuffle (block order, where the short blocks' holes
  // fall). O(S) to build.
  struct Layout {
    std::uint64_t epoch = 0;
    EpochPermutation blocks{0, 0, 0};
    std::vector<std::uint64_t> hole_slot, hole_len, hole_real;  // sorted by slot
  };
  Layout layout(std::uint64_t epoch) const;
  // Epochized: (source, draw index within the source's epoch) of position t of an epoch; and
  // the sample of a draw.
  std::pair<std::uint32_t, std::uint64_t> draw_at(const Layout& layout, std::uint64_t t) const;
  std::uint64_t draw_sample(std::uint32_t source, std::uint64_t epoch, std::uint64_t draw) const;

 private:
  Plan() = default;
  std::uint64_t slot_of(const Layout& l, std::uint64_t t) const;
  std::uint64_t window_start(const Layout& l, std::uint64_t w) const;

  PlanConfig c_;
  std::uint64_t spec_ = 0;
  std::vector<std::uint64_t> n_;          // per-epoch draws per source
  std::vector<std::uint64_t> block_base_;  // first global block of each source (size S+1)
  std::uint64_t total_ = 0;               // T
  std::uint64_t blocks_ = 0;              // B
  std::vector<double> cdf_;               // weighted
};

struct PlanState {
  std::uint64_t spec = 0;
  std::uint64_t seed = 0;
  PlanMode mode = PlanMode::kEpochized;
  std::uint64_t global_batch = 0;
  std::uint64_t position = 0;  // first position not yet consumed (a multiple of global_batch)
  std::uint64_t epoch = 0;     // informative: position's epoch
  std::vector<std::uint64_t> cursors;  // per source: draws planned in [0, position)
  std::vector<std::uint64_t> carry;    // positions held back by a packer (reserved; empty today)

  // "stoker-plan v1 spec=… seed=… mode=… batch=… position=… epoch=… cursors=a,b carry= check=…"
  std::string serialize() const;
  static Result<PlanState> parse(std::string_view text);
  bool operator==(const PlanState&) const = default;
};

class PlanCursor {
 public:
  static Result<PlanCursor> start(const Plan& plan, int rank, int world_size);
  // `warnings` (may be null) says what an allowed spec change did.
  static Result<PlanCursor> resume(const Plan& plan, const PlanState& state, int rank, int world_size,
                                   bool allow_spec_change = false, std::vector<std::string>* warnings = nullptr);

  // This rank's G/W items of the next global step, in position order.
  std::vector<PlanItem> next_step();
  // The job's state after the steps taken so far (identical on every rank).
  PlanState state() const;
  std::uint64_t step() const;
  // Per source: samples the plan gave the whole job in [0, position).
  const std::vector<std::uint64_t>& planned() const { return cursors_; }

 private:
  PlanCursor(const Plan& plan, int rank, int world) : plan_(&plan), rank_(rank), world_(world) {}
  const Plan* plan_;
  int rank_, world_;
  std::uint64_t position_ = 0;
  std::vector<std::uint64_t> cursors_;
  std::vector<std::uint64_t> carry_;
  std::optional<Plan::Layout> layout_;
};

}  // namespace stoker::dataset
