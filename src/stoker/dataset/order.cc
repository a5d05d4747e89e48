#include "stoker/dataset/order.h"

#include <bit>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "stoker/base/mix.h"
#include "stoker/base/option_name.h"

namespace stoker::dataset {

// ---- EpochPermutation ----------------------------------------------------------------------

EpochPermutation::EpochPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                   bool shuffle)
    : n_(n), shuffle_(shuffle && n > 1) {
  if (!shuffle_) return;
  // Domain 2^b, b = bit width of n - 1, so 2^b < 2n and cycle-walking needs < 2 encryptions on
  // average. b may be odd, so the halves are unbalanced (high_bits_ >= low_bits_) and swap widths
  // every round.
  const int bits = std::bit_width(n - 1);
  low_bits_ = bits / 2;
  high_bits_ = bits - low_bits_;
  // (seed, epoch) -> round keys. mix64 is a bijection, so for one seed distinct epochs give
  // distinct key streams.
  std::uint64_t state = mix64(mix64(seed ^ 0x243f6a8885a308d3ULL) ^ epoch);
  for (int i = 0; i < kRounds; ++i) {
    state += 0x9e3779b97f4a7c15ULL;
    keys_[i] = mix64(state);
  }
}

namespace {

constexpr std::uint64_t mask_of(int bits) { return bits >= 64 ? ~0ULL : (1ULL << bits) - 1; }

}  // namespace

// x = L || R with |L| = high_bits_, |R| = low_bits_. Round i: (L, R) -> (R, L ^ F_i(R)), the new
// right half taking L's width; after an even number of rounds the widths are as they started.
std::uint64_t EpochPermutation::encrypt(std::uint64_t x) const {
  int left_bits = high_bits_;
  int right_bits = low_bits_;
  std::uint64_t left = right_bits >= 64 ? 0 : x >> right_bits;
  std::uint64_t right = x & mask_of(right_bits);
  for (int i = 0; i < kRounds; ++i) {
    const std::uint64_t next_right = left ^ (mix64(right ^ keys_[i]) & mask_of(left_bits));
    left = right;
    right = next_right;
    std::swap(left_bits, right_bits);
  }
  return (left << right_bits) | right;
}

std::uint64_t EpochPermutation::decrypt(std::uint64_t x) const {
  int left_bits = high_bits_;  // kRounds is even: the output has the input's layout
  int right_bits = low_bits_;
  std::uint64_t left = right_bits >= 64 ? 0 : x >> right_bits;
  std::uint64_t right = x & mask_of(right_bits);
  for (int i = kRounds - 1; i >= 0; --i) {
    // Undo (L, R) -> (R, L ^ F(R)): the previous right half is today's left.
    const std::uint64_t prev_left = right ^ (mix64(left ^ keys_[i]) & mask_of(right_bits));
    right = left;
    left = prev_left;
    std::swap(left_bits, right_bits);
  }
  return (left << right_bits) | right;
}

std::uint64_t EpochPermutation::at(std::uint64_t position) const {
  STOKER_CHECK(position < n_, "epoch position out of range");
  if (!shuffle_) return position;
  // Cycle-walking: the Feistel network permutes [0, 2^2k); following the cycle from an in-range
  // point until it re-enters [0, n) restricts it to a permutation of [0, n).
  std::uint64_t x = encrypt(position);
  while (x >= n_) x = encrypt(x);
  return x;
}

std::uint64_t EpochPermutation::position_of(std::uint64_t sample) const {
  STOKER_CHECK(sample < n_, "sample id out of range");
  if (!shuffle_) return sample;
  std::uint64_t x = decrypt(sample);
  while (x >= n_) x = decrypt(x);
  return x;
}

// ---- RankShard -----------------------------------------------------------------------------

Result<RankShard> RankShard::make(std::uint64_t num_samples, const OrderConfig& config,
                                  std::uint64_t epoch, std::uint64_t start_position, int rank,
                                  int world_size) {
  if (world_size < 1) {
    return invalid_argument("world size must be >= 1, got " + std::to_string(world_size));
  }
  if (rank < 0 || rank >= world_size) {
    return invalid_argument("rank " + std::to_string(rank) + " is outside world size " +
                            std::to_string(world_size));
  }
  const auto w = static_cast<std::uint64_t>(world_size);
  const auto r = static_cast<std::uint64_t>(rank);
  std::uint64_t size = 0;
  if (start_position < num_samples) {
    const std::uint64_t remaining = num_samples - start_position;
    switch (config.tail) {
      case TailPolicy::kPad: size = remaining / w + (remaining % w != 0 ? 1 : 0); break;
      case TailPolicy::kDrop: size = remaining / w; break;
      case TailPolicy::kUneven: size = r < remaining ? (remaining - r - 1) / w + 1 : 0; break;
    }
  }
  return RankShard(EpochPermutation(num_samples, config.seed, epoch, config.shuffle),
                   start_position, rank, world_size, size);
}

std::uint64_t RankShard::global_position(std::uint64_t k) const {
  STOKER_CHECK(k < size_, "shard item out of range");
  return start_ + static_cast<std::uint64_t>(rank_) + k * static_cast<std::uint64_t>(world_);
}

std::uint64_t RankShard::sample(std::uint64_t k) const {
  std::uint64_t q = global_position(k);
  const std::uint64_t n = perm_.size();
  // Pad items (only under kPad) wrap to the start of the remaining order, as DistributedSampler
  // repeats indices[:padding] — here "indices" is the remainder [start, n).
  if (q >= n) q = start_ + (q - start_) % (n - start_);
  return perm_.at(q);
}

std::uint64_t RankShard::resume_position(std::uint64_t steps) const {
  STOKER_CHECK(steps <= size_, "more steps than the shard has items");
  const std::uint64_t end = start_ + steps * static_cast<std::uint64_t>(world_);
  return end < perm_.size() ? end : perm_.size();
}

// ---- RankInfo ------------------------------------------------------------------------------

Status RankInfo::validate() const {
  if (world_size < 1) return invalid_argument("world size must be >= 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size) {
    return invalid_argument("rank " + std::to_string(rank) + " is outside world size " +
                            std::to_string(world_size));
  }
  const bool local_known = local_rank != kUnknown || local_world_size != kUnknown;
  if (local_known) {
    if (local_world_size < 1 || local_world_size > world_size) {
      return invalid_argument("local world size " + std::to_string(local_world_size) +
                              " must be in [1, world size " + std::to_string(world_size) + "]");
    }
    if (local_rank < 0 || local_rank >= local_world_size) {
      return invalid_argument("local rank " + std::to_string(local_rank) +
                              " is outside local world size " + std::to_string(local_world_size));
    }
  }
  return ok_status();
}

std::string RankInfo::to_string() const {
  auto show = [](int v) { return v == kUnknown ? std::string("?") : std::to_string(v); };
  return "rank " + std::to_string(rank) + "/" + std::to_string(world_size) + " (local " +
         show(local_rank) + "/" + show(local_world_size) + ") from " + source;
}

namespace {

Result<int> parse_count(std::string_view name, const char* text) {
  std::string_view s(text);
  int value = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < 0) {
    return invalid_argument(std::string(name) + "='" + std::string(s) +
                            "' is not a non-negative integer");
  }
  return value;
}

// Reads an optional integer variable: nullopt when unset.
Result<std::optional<int>> read_var(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr) return std::optional<int>();
  STOKER_ASSIGN_OR_RETURN(int value, parse_count(name, v));
  return std::optional<int>(value);
}

// Slurm's compressed tasks-per-node list, e.g. "2(x3),1": node i's count, or nullopt.
std::optional<int> slurm_tasks_on_node(std::string_view list, int node) {
  int index = 0;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    int count = 0;
    int repeat = 1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), count);
    if (ec != std::errc()) return std::nullopt;
    std::string_view rest(p, static_cast<std::size_t>(item.data() + item.size() - p));
    if (!rest.empty()) {
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')') return std::nullopt;
      auto [q, ec2] = std::from_chars(rest.data() + 2, rest.data() + rest.size() - 1, repeat);
      if (ec2 != std::errc() || q != rest.data() + rest.size() - 1) return std::nullopt;
    }
    if (node < index + repeat) return count;
    index += repeat;
  }
  return std::nullopt;
}

struct Source {
  const char* name;
  const char* rank;
  const char* world;
  const char* local_rank;
  const char* local_world;  // nullptr: derived (Slurm)
};

constexpr Source kSources[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

Result<RankInfo> finish(RankInfo info, std::string_view where) {
  // A single process knows its local layout trivially.
  if (info.world_size == 1 && info.local_rank == RankInfo::kUnknown &&
      info.local_world_size == RankInfo::kUnknown) {
    info.local_rank = 0;
    info.local_world_size = 1;
  }
  Status valid = info.validate();
  if (!valid.ok()) return std::move(valid).error().with_context(std::string(where));
  return info;
}

Result<std::optional<RankInfo>> from_source(const Source& src, const EnvLookup& env) {
  STOKER_ASSIGN_OR_RETURN(std::optional<int> rank, read_var(env, src.rank));
  STOKER_ASSIGN_OR_RETURN(std::optional<int> world, read_var(env, src.world));
  if (!rank && !world) return std::optional<RankInfo>();
  const std::string where = std::string("rank from ") + src.name + " environment";
  if (!rank || !world) {
    return invalid_argument(std::string(rank ? src.rank : src.world) + " is set but " +
                            (rank ? src.world : src.rank) + " is not")
        .with_context(where);
  }
  RankInfo info{.rank = *rank, .world_size = *world, .local_rank = RankInfo::kUnknown,
                .local_world_size = RankInfo::kUnknown, .source = src.name};
  STOKER_ASSIGN_OR_RETURN(std::optional<int> local_rank, read_var(env, src.local_rank));
  if (local_rank) info.local_rank = *local_rank;
  if (src.local_world != nullptr) {
    STOKER_ASSIGN_OR_RETURN(std::optional<int> local_world, read_var(env, src.local_world));
    if (local_world) info.local_world_size = *local_world;
  } else {
    // Slurm: SLURM_NTASKS_PER_NODE only exists with --ntasks-per-node; otherwise the step's
    // compressed list, indexed by this node. Unknown when neither is readable.
    std::optional<int> per_node;
    if (const char* v = env("SLURM_NTASKS_PER_NODE"); v != nullptr) {
      Result<int> n = parse_count("SLURM_NTASKS_PER_NODE", v);
      if (n.ok()) per_node = *n;
    }
    const char* list = env("SLURM_STEP_TASKS_PER_NODE");
    if (list == nullptr) list = env("SLURM_TASKS_PER_NODE");
    const char* node = env("SLURM_NODEID");
    if (!per_node && list != nullptr && node != nullptr) {
      Result<int> node_id = parse_count("SLURM_NODEID", node);
      if (node_id.ok()) per_node = slurm_tasks_on_node(list, *node_id);
    }
    if (per_node) info.local_world_size = *per_node;
  }
  // Half-known local info is as good as none: a local rank without a local size cannot be checked.
  if (info.local_rank == RankInfo::kUnknown || info.local_world_size == RankInfo::kUnknown) {
    info.local_rank = RankInfo::kUnknown;
    info.local_world_size = RankInfo::kUnknown;
  }
  STOKER_ASSIGN_OR_RETURN(RankInfo done, finish(std::move(info), where));
  return std::optional<RankInfo>(std::move(done));
}

}  // namespace

Result<RankInfo> resolve_rank_info(const RankFlags& flags, const EnvLookup& env_in) {
  const EnvLookup env = env_in ? env_in : EnvLookup([](const char* name) { return std::getenv(name); });
  if (flags.rank || flags.world_size) {
    if (!flags.rank || !flags.world_size) {
      return invalid_argument(option_name("rank", "--rank") + " and " +
                              option_name("world_size", "--world-size") +
                              " must be given together");
    }
    RankInfo info{.rank = *flags.rank, .world_size = *flags.world_size,
                  .local_rank = flags.local_rank.value_or(RankInfo::kUnknown),
                  .local_world_size = flags.local_world_size.value_or(RankInfo::kUnknown),
                  .source = "flags"};
    if (info.local_rank == RankInfo::kUnknown || info.local_world_size == RankInfo::kUnknown) {
      if (flags.local_rank || flags.local_world_size) {
        return invalid_argument(option_name("local_rank", "--local-rank") + " and " +
                                option_name("local_world_size", "--local-world-size") +
                                " must be given together");
      }
    }
    return finish(std::move(info), "rank from flags");
  }
  for (const Source& src : kSources) {
    STOKER_ASSIGN_OR_RETURN(std::optional<RankInfo> info, from_source(src, env));
    if (info) return std::move(*info);
  }
  return RankInfo{};
}

}  // namespace stoker::dataset
