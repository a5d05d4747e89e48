// Sample order: which sample each rank reads at each step of an epoch.
// EpochPermutation maps a global position of epoch e to a sample id with a keyed bijection of
// [0, n) (6-round unbalanced Feistel network on the next power of two, cycle-walked into range): O(1)
// per lookup, nothing materialised, identical on every platform. RankShard is one rank's strided
// share of what remains of that order from a global start position, which is what makes resume
// after a world-size change exact (DESIGN.md: state = (epoch, global position)).
// RankInfo comes from flags or the launcher's environment (torchrun, Open MPI, Slurm).
// Plain values, thread-safe for concurrent reads. Errors: InvalidArgument from the factories.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "stoker/base/result.h"

namespace stoker::dataset {

class EpochPermutation {
 public:
  // shuffle = false gives the identity (evaluation, debugging).
  EpochPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch, bool shuffle = true);

  std::uint64_t size() const { return n_; }
  // Sample id at `position` (< size(); out of range is a bug and aborts).
  std::uint64_t at(std::uint64_t position) const;
  // Inverse: the position of `sample` (< size()) in this epoch.
  std::uint64_t position_of(std::uint64_t sample) const;

 private:
  static constexpr int kRounds = 6;  // even: the halves' widths are back in place at the end
  std::uint64_t encrypt(std::uint64_t x) const;
  std::uint64_t decrypt(std::uint64_t x) const;

  std::uint64_t n_;
  bool shuffle_;
  int low_bits_ = 0;   // width of the right half at rounds 0, 2, 4 (the left half has high_bits_)
  int high_bits_ = 0;  // low_bits_ + high_bits_ = bit width of n - 1
  std::uint64_t keys_[kRounds] = {};
};

// How the last R mod W positions are shared when the remaining R samples do not split evenly.
enum class TailPolicy {
  kPad,     // torch DistributedSampler(drop_last=False): repeat the first positions of the
            // remaining order so every rank gets ceil(R/W); nothing is lost, < W repeats. Default.
  kDrop,    // DistributedSampler(drop_last=True): every rank gets floor(R/W); < W samples skipped
            // this epoch (a different set each epoch, as the order changes).
  kUneven,  // no padding: ranks differ by at most one (evaluation; DDP training would hang).
};

struct OrderConfig {
  std::uint64_t seed = 0;
  bool shuffle = true;
  TailPolicy tail = TailPolicy::kPad;
};

// Rank r of world W reads global positions start + r, start + r + W, start + r + 2W, ... of the
// epoch order. After every rank consumed k items the whole job has consumed positions
// [start, start + k*W): that number is the resume state, valid for any later world size.
class RankShard {
 public:
  // start_position >= num_samples means the epoch is already done (an empty shard).
  static Result<RankShard> make(std::uint64_t num_samples, const OrderConfig& config,
                                std::uint64_t epoch, std::uint64_t start_position, int rank,
                                int world_size);

  std::uint64_t size() const { return size_; }
  // Sample id of this rank's k-th item (k < size()).
  std::uint64_t sample(std::uint64_t k) const;
  // Global position of item k in the padded order; >= num_samples only for pad items.
  std::uint64_t global_position(std::uint64_t k) const;
  // The resume state once every rank consumed `steps` items (steps <= size()); capped at
  // num_samples. Under kDrop the end of the epoch is < num_samples (the dropped tail): record a
  // finished epoch as (epoch + 1, position 0), not as this number.
  std::uint64_t resume_position(std::uint64_t steps) const;

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  std::uint64_t start_position() const { return start_; }
  const EpochPermutation& permutation() const { return perm_; }

 private:
  RankShard(EpochPermutation perm, std::uint64_t start, int rank, int world, std::uint64_t size)
      : perm_(perm), start_(start), rank_(rank), world_(world), size_(size) {}

  EpochPermutation perm_;
  std::uint64_t start_;
  int rank_;
  int world_;
  std::uint64_t size_;
};

struct RankInfo {
  static constexpr int kUnknown = -1;  // for local_* when the launcher does not say

  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string source = "default";  // "flags", "torchrun", "openmpi", "slurm", "default"

  Status validate() const;
  std::string to_string() const;  // "rank 3/8 (local 1/4) from torchrun"
};

// Explicit values (command-line flags, a config file). rank and world_size go together.
struct RankFlags {
  std::optional<int> rank = std::nullopt;
  std::optional<int> world_size = std::nullopt;
  std::optional<int> local_rank = std::nullopt;
  std::optional<int> local_world_size = std::nullopt;
};

// Returns the variable's value or nullptr; std::getenv when empty (tests pass a fake).
using EnvLookup = std::function<const char*(const char*)>;

// First source present wins: flags > torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE)
// > Open MPI (OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}) > Slurm (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, tasks per node) > a single process. A source is present when its
// rank or world variable is set; then both must be set, be integers and satisfy rank < world.
// Open MPI ranks above Slurm on purpose: mpirun inside an sbatch job inherits Slurm variables
// that describe the batch step (every process would read SLURM_PROCID=0), see README.md.
Result<RankInfo> resolve_rank_info(const RankFlags& flags = {}, const EnvLookup& env = {});

}  // namespace stoker::dataset
