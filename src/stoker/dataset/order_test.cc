#include "stoker/dataset/order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace stoker::dataset {
namespace {

std::vector<std::uint64_t> materialise(const EpochPermutation& p) {
  std::vector<std::uint64_t> out(p.size());
  for (std::uint64_t i = 0; i < p.size(); ++i) out[i] = p.at(i);
  return out;
}

TEST(EpochPermutationTest, IsABijectionForManySizes) {
  const std::uint64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 64, 65, 97, 255, 256,
                                 257, 1000, 1023, 1024, 1025, 4099, 65536, 65537, 1'000'003};
  for (std::uint64_t n : sizes) {
    for (std::uint64_t seed : {0ULL, 1ULL, 0xdeadbeefULL}) {
      EpochPermutation p(n, seed, 3);
      std::vector<char> seen(n, 0);
      for (std::uint64_t pos = 0; pos < n; ++pos) {
        const std::uint64_t s = p.at(pos);
        ASSERT_LT(s, n) << "n=" << n;
        ASSERT_EQ(seen[s], 0) << "n=" << n << " sample " << s << " twice";
        seen[s] = 1;
        ASSERT_EQ(p.position_of(s), pos) << "n=" << n;
      }
    }
  }
}

TEST(EpochPermutationTest, HugeSizesStayInRangeAndInvert) {
  const std::uint64_t sizes[] = {(1ULL << 40) + 13, (1ULL << 63) + 5, ~0ULL, 4'294'967'311ULL};
  for (std::uint64_t n : sizes) {
    EpochPermutation p(n, 7, 0);
    for (std::uint64_t i = 0; i < 2000; ++i) {
      const std::uint64_t pos = (i * 0x9e3779b97f4a7c15ULL) % n;
      const std::uint64_t s = p.at(pos);
      ASSERT_LT(s, n);
      ASSERT_EQ(p.position_of(s), pos);
    }
  }
}

TEST(EpochPermutationTest, DeterministicAndKeyedBySeedAndEpoch) {
  const std::uint64_t n = 10000;
  const auto base = materialise(EpochPermutation(n, 42, 0));
  EXPECT_EQ(base, materialise(EpochPermutation(n, 42, 0)));
  auto differing = [&](const std::vector<std::uint64_t>& other) {
    std::uint64_t d = 0;
    for (std::uint64_t i = 0; i < n; ++i) d += base[i] != other[i];
    return d;
  };
  // Two independent random orders agree at ~1 position in n.
  EXPECT_GT(differing(materialise(EpochPermutation(n, 43, 0))), n * 99 / 100);
  EXPECT_GT(differing(materialise(EpochPermutation(n, 42, 1))), n * 99 / 100);
}

TEST(EpochPermutationTest, LooksShuffled) {
  const std::uint64_t n = 100000;
  const auto order = materialise(EpochPermutation(n, 5, 2));
  // Pearson correlation of position and sample id: ~N(0, 1/sqrt(n)) for a random order.
  double mean = (n - 1) / 2.0, num = 0, den = 0;
  std::uint64_t fixed = 0, ascending_neighbours = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    num += (i - mean) * (order[i] - mean);
    den += (i - mean) * (i - mean);
    fixed += order[i] == i;
    if (i > 0) ascending_neighbours += order[i] == order[i - 1] + 1;
  }
  EXPECT_LT(std::abs(num / den), 0.02);
  EXPECT_LT(fixed, 10u);
  EXPECT_LT(ascending_neighbours, 10u);
  // Each tenth of the order holds ~n/10 samples from the first tenth of the ids.
  for (int part = 0; part < 10; ++part) {
    std::uint64_t low = 0;
    for (std::uint64_t i = part * n / 10; i < (part + 1) * n / 10; ++i) low += order[i] < n / 10;
    EXPECT_NEAR(static_cast<double>(low), n / 100.0, 150.0) << "part " << part;
  }
}

// Resume across releases depends on these exact values: changing the algorithm changes every
// saved position's meaning. If this fails on purpose, bump the checkpoint format.
TEST(EpochPermutationTest, GoldenOrderIsStable) {
  EXPECT_EQ(materialise(EpochPermutation(10, 42, 0)),
            (std::vector<std::uint64_t>{7, 1, 0, 6, 8, 5, 3, 2, 9, 4}));
  EXPECT_EQ(EpochPermutation(1'000'000'007ULL, 1, 9).at(123456789), 913248649u);
  // Odd bit widths take the unbalanced Feistel path.
  const EpochPermutation odd(100, 42, 0);
  const std::uint64_t first[] = {45, 51, 29, 85, 16, 46, 99, 14, 89, 65};
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(odd.at(i), first[i]);
  EXPECT_EQ(EpochPermutation(5'000'000'000ULL, 2, 5).at(42), 3387383820u);
}

TEST(EpochPermutationTest, NoShuffleIsIdentity) {
  EpochPermutation p(50, 42, 3, /*shuffle=*/false);
  for (std::uint64_t i = 0; i < 50; ++i) EXPECT_EQ(p.at(i), i);
}

std::vector<std::vector<std::uint64_t>> all_shards(std::uint64_t n, const OrderConfig& c,
                                                   std::uint64_t epoch, std::uint64_t start,
                                                   int world) {
  std::vector<std::vector<std::uint64_t>> out;
  for (int r = 0; r < world; ++r) {
    auto shard = RankShard::make(n, c, epoch, start, r, world);
    EXPECT_TRUE(shard.ok());
    std::vector<std::uint64_t> ids;
    for (std::uint64_t k = 0; k < shard->size(); ++k) ids.push_back(shard->sample(k));
    out.push_back(std::move(ids));
  }
  return out;
}

// Identity order makes the layout visible: it must be torch DistributedSampler's.
TEST(RankShardTest, MatchesDistributedSamplerLayout) {
  OrderConfig pad{.shuffle = false, .tail = TailPolicy::kPad};
  using V = std::vector<std::vector<std::uint64_t>>;
  EXPECT_EQ(all_shards(10, pad, 0, 0, 4), (V{{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}));
  OrderConfig drop{.shuffle = false, .tail = TailPolicy::kDrop};
  EXPECT_EQ(all_shards(10, drop, 0, 0, 4), (V{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  OrderConfig uneven{.shuffle = false, .tail = TailPolicy::kUneven};
  EXPECT_EQ(all_shards(10, uneven, 0, 0, 4), (V{{0, 4, 8}, {1, 5, 9}, {2, 6}, {3, 7}}));
  // Padding longer than the data repeats it (torch: indices *= ceil(pad / len)).
  EXPECT_EQ(all_shards(2, pad, 0, 0, 5), (V{{0}, {1}, {0}, {1}, {0}}));
}

TEST(RankShardTest, ShardsAreDisjointAndCoverTheEpoch) {
  for (std::uint64_t n : {0ULL, 1ULL, 7ULL, 100ULL, 1001ULL, 4096ULL}) {
    for (int world : {1, 2, 3, 8, 13}) {
      for (TailPolicy tail : {TailPolicy::kPad, TailPolicy::kDrop, TailPolicy::kUneven}) {
        OrderConfig c{.seed = 9, .tail = tail};
        auto shards = all_shards(n, c, 4, 0, world);
        std::map<std::uint64_t, int> count;
        std::uint64_t total = 0;
        for (auto& s : shards) {
          if (tail != TailPolicy::kUneven) {
            ASSERT_EQ(s.size(), shards[0].size());
          }
          for (auto id : s) count[id]++;
          total += s.size();
        }
        const auto w = static_cast<std::uint64_t>(world);
        SCOPED_TRACE("n=" + std::to_string(n) + " world=" + std::to_string(world) +
                     " tail=" + std::to_string(static_cast<int>(tail)));
        if (tail == TailPolicy::kUneven) {
          ASSERT_EQ(total, n);
          ASSERT_EQ(count.size(), n);  // every sample once
        } else if (tail == TailPolicy::kDrop) {
          ASSERT_EQ(total, n / w * w);
          ASSERT_EQ(count.size(), total);  // no repeats, < world dropped
        } else {
          ASSERT_EQ(total, (n + w - 1) / w * w);
          ASSERT_EQ(count.size(), n);  // nothing lost
          std::uint64_t repeats = 0;
          for (auto& [id, k] : count) repeats += k - 1;
          ASSERT_EQ(repeats, total - n);
          ASSERT_LT(repeats, w);
        }
      }
    }
  }
}

// DESIGN.md: state = (epoch, global position); after a world-size change the remaining order is
// re-split. What ran before plus what runs after must be exactly the epoch.
TEST(RankShardTest, ResplitAfterWorldSizeChangeCoversExactlyTheRemainder) {
  const std::uint64_t n = 1013;
  for (auto [before, after] : {std::pair{8, 3}, {3, 8}, {4, 4}, {1, 7}, {6, 1}}) {
    for (std::uint64_t steps : {0ULL, 1ULL, 50ULL, 120ULL}) {
      OrderConfig c{.seed = 77, .tail = TailPolicy::kUneven};
      std::map<std::uint64_t, int> count;
      std::uint64_t state = 0;
      for (int r = 0; r < before; ++r) {
        auto shard = *RankShard::make(n, c, 2, 0, r, before);
        const std::uint64_t k_end = std::min<std::uint64_t>(steps, shard.size());
        for (std::uint64_t k = 0; k < k_end; ++k) count[shard.sample(k)]++;
        if (r == 0) state = shard.resume_position(std::min(steps, shard.size()));
      }
      ASSERT_EQ(state, std::min<std::uint64_t>(steps * before, n));
      for (int r = 0; r < after; ++r) {
        auto shard = *RankShard::make(n, c, 2, state, r, after);
        EXPECT_EQ(shard.start_position(), state);
        for (std::uint64_t k = 0; k < shard.size(); ++k) count[shard.sample(k)]++;
      }
      ASSERT_EQ(count.size(), n) << before << "->" << after << " after " << steps;
      for (auto& [id, k] : count) ASSERT_EQ(k, 1) << "sample " << id;
    }
  }
}

TEST(RankShardTest, PaddedResumeRepeatsOnlyWithinTheRemainder) {
  const std::uint64_t n = 100;
  OrderConfig c{.seed = 1, .tail = TailPolicy::kPad};
  auto shards = all_shards(n, c, 0, 96, 3);  // 4 left for 3 ranks: 2 each, 2 pads
  std::map<std::uint64_t, int> count;
  for (auto& s : shards) {
    ASSERT_EQ(s.size(), 2u);
    for (auto id : s) count[id]++;
  }
  EpochPermutation p(n, 1, 0);
  std::map<std::uint64_t, int> expected;
  for (std::uint64_t pos = 96; pos < 100; ++pos) expected[p.at(pos)]++;
  expected[p.at(96)]++;
  expected[p.at(97)]++;
  EXPECT_EQ(count, expected);
  // Past the end: the epoch is over.
  EXPECT_EQ(RankShard::make(n, c, 0, 100, 0, 3)->size(), 0u);
  EXPECT_EQ(RankShard::make(n, c, 0, 102, 2, 3)->size(), 0u);
}

TEST(RankShardTest, RejectsBadRanks) {
  EXPECT_EQ(RankShard::make(10, {}, 0, 0, 2, 2).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RankShard::make(10, {}, 0, 0, -1, 2).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RankShard::make(10, {}, 0, 0, 0, 0).error().code(), ErrorCode::kInvalidArgument);
}

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(RankInfoTest, SingleProcessByDefault) {
  auto info = resolve_rank_info({}, fake_env({}));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->rank, 0);
  EXPECT_EQ(info->world_size, 1);
  EXPECT_EQ(info->local_world_size, 1);
  EXPECT_EQ(info->source, "default");
}

TEST(RankInfoTest, ReadsEachLauncher) {
  auto torch = resolve_rank_info(
      {}, fake_env({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}));
  ASSERT_TRUE(torch.ok()) << torch.error().to_string();
  EXPECT_EQ(torch->to_string(), "rank 5/8 (local 1/4) from torchrun");

  auto mpi = resolve_rank_info({}, fake_env({{"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "16"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}));
  ASSERT_TRUE(mpi.ok());
  EXPECT_EQ(mpi->to_string(), "rank 3/16 (local 3/8) from openmpi");

  auto slurm = resolve_rank_info({}, fake_env({{"SLURM_PROCID", "7"},
                                               {"SLURM_NTASKS", "9"},
                                               {"SLURM_LOCALID", "0"},
                                               {"SLURM_NODEID", "3"},
                                               {"SLURM_STEP_TASKS_PER_NODE", "2(x3),3"}}));
  ASSERT_TRUE(slurm.ok()) << slurm.error().to_string();
  EXPECT_EQ(slurm->to_string(), "rank 7/9 (local 0/3) from slurm");

  auto slurm_bare = resolve_rank_info({}, fake_env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}));
  ASSERT_TRUE(slurm_bare.ok());
  EXPECT_EQ(slurm_bare->to_string(), "rank 1/2 (local ?/?) from slurm");
}

TEST(RankInfoTest, Precedence) {
  std::map<std::string, std::string> all = {
      {"RANK", "1"},         {"WORLD_SIZE", "4"},          {"OMPI_COMM_WORLD_RANK", "2"},
      {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}};
  EXPECT_EQ(resolve_rank_info({.rank = 0, .world_size = 2}, fake_env(all))->source, "flags");
  EXPECT_EQ(resolve_rank_info({}, fake_env(all))->source, "torchrun");
  all.erase("RANK");
  all.erase("WORLD_SIZE");
  EXPECT_EQ(resolve_rank_info({}, fake_env(all))->source, "openmpi");
  all.erase("OMPI_COMM_WORLD_RANK");
  all.erase("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(resolve_rank_info({}, fake_env(all))->source, "slurm");
}

// Regression guard: `mpirun -np 8` inside an sbatch script. Every process inherits the batch
// step's SLURM_PROCID=0 / SLURM_NTASKS; reading Slurm first would make all eight rank 0.
TEST(RankInfoTest, MpirunInsideSbatchUsesOpenMpiRanks) {
  auto info = resolve_rank_info({}, fake_env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "8"},
                                              {"OMPI_COMM_WORLD_RANK", "5"},
                                              {"OMPI_COMM_WORLD_SIZE", "8"}}));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->rank, 5);
  EXPECT_EQ(info->source, "openmpi");
}

TEST(RankInfoTest, RejectsBrokenEnvironments) {
  auto code = [](RankFlags f, std::map<std::string, std::string> env) {
    auto r = resolve_rank_info(f, fake_env(std::move(env)));
    return r.ok() ? std::string("ok") : r.error().to_string();
  };
  EXPECT_NE(code({}, {{"RANK", "1"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(code({}, {{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("outside world size"), std::string::npos);
  EXPECT_NE(code({}, {{"RANK", "x1"}, {"WORLD_SIZE", "4"}}).find("RANK='x1'"), std::string::npos);
  EXPECT_NE(code({}, {{"RANK", "-1"}, {"WORLD_SIZE", "4"}}).find("non-negative"), std::string::npos);
  EXPECT_NE(code({}, {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}})
                .find("local rank 2"),
            std::string::npos);
  EXPECT_NE(code({.rank = 1}, {}).find("together"), std::string::npos);
  EXPECT_NE(code({.rank = 2, .world_size = 2}, {}).find("outside world size"), std::string::npos);
  EXPECT_EQ(code({.rank = 1, .world_size = 2, .local_rank = 1, .local_world_size = 2}, {}), "ok");
}

}  // namespace
}  // namespace stoker::dataset
