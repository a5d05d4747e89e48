// Broken data: a synthetic set with ~10% deliberately broken records (missing, corrupt and
// truncated images, malformed JSON, no assistant turn) plus over-long samples (a small
// max_length). The run completes, delivers every good sample once, reports each bad one with
// its stage and reason (checked against synth's bad.jsonl), stays deterministic, and the failure
// budget / strict mode stop it with a message naming the last failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// Lengths (non-pad tokens) of every sample of a clean run, by sample id.
std::map<std::uint64_t, std::int64_t> lengths(const LoaderConfig& c) {
  std::map<std::uint64_t, std::int64_t> out;
  auto loader = Loader::create(c);
  EXPECT_TRUE(loader.ok());
  for (;;) {
    auto b = (*loader)->next();
    EXPECT_TRUE(b.ok()) << b.error().to_string();
    if (!b.ok() || !b->has_value()) break;
    const Batch& batch = **b;
    const std::int64_t L = batch.layout().find("input_ids")->shape[1];
    const std::int64_t* mask = batch.as<std::int64_t>("attention_mask");
    auto ids = testing::sample_ids(batch);
    for (std::size_t r = 0; r < ids.size(); ++r) {
      out[ids[r]] = std::count(mask + r * L, mask + (r + 1) * L, 1);
    }
  }
  return out;
}

TEST(LoaderErrorsTest, SkipsReportsAndDeliversEveryGoodSample) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = testing::make_dataset("broken", 60, 0.1);
  ASSERT_GE(ds.bad.size(), 5u);
  LoaderConfig c = testing::small_config(ds.data_path);
  std::string report = ds.data_path + ".errors.jsonl";
  c.errors.report_path = report;

  // Pick a max_length that drops the longest few good samples.
  std::map<std::uint64_t, std::int64_t> len = lengths(c);
  ASSERT_EQ(len.size() + ds.bad.size(), 60u);
  std::vector<std::int64_t> sorted;
  for (auto& [id, n] : len) sorted.push_back(n);
  std::sort(sorted.begin(), sorted.end());
  c.max_length = sorted[sorted.size() - 4] - 1;  // the 4 longest (ties: more) are over
  std::set<std::uint64_t> over;
  for (auto& [id, n] : len) {
    if (n > c.max_length) over.insert(id);
  }

  testing::RunResult r = testing::run_loader(c);
  ASSERT_FALSE(r.error) << r.error->to_string();
  std::set<std::uint64_t> delivered(r.ids.begin(), r.ids.end());
  EXPECT_EQ(delivered.size(), r.ids.size()) << "a sample was delivered twice";
  for (auto& [id, n] : len) EXPECT_EQ(delivered.count(id), over.count(id) ? 0u : 1u) << id;
  EXPECT_EQ(r.stats.failed, static_cast<std::int64_t>(ds.bad.size() + over.size()));
  EXPECT_EQ(r.state.errors, ds.bad.size() + over.size());

  // Every report line names its record; bad.jsonl's lines match with the right stage.
  std::vector<nlohmann::json> lines = read_jsonl(report);
  ASSERT_EQ(lines.size(), ds.bad.size() + over.size());
  std::map<int, nlohmann::json> by_line;
  for (const auto& j : lines) {
    EXPECT_EQ(j["file"].get<std::string>(), ds.data_path);
    EXPECT_FALSE(j["reason"].get<std::string>().empty());
    EXPECT_EQ(delivered.count(j["sample"].get<std::uint64_t>()), 0u);
    by_line[j["line"].get<int>()] = j;
  }
  const std::map<std::string, std::set<std::string>> stage_of = {
      {"missing_image", {"fetch"}},  {"corrupt_image", {"decode"}},
      {"truncated_image", {"decode"}}, {"malformed_json", {"parse"}},
      {"no_assistant", {"validate", "parse"}}};
  for (const synth::BadEntry& bad : ds.bad) {
    ASSERT_TRUE(by_line.count(bad.line)) << "bad line " << bad.line << " not reported";
    const nlohmann::json& j = by_line[bad.line];
    std::string kind(synth::bad_kind_name(bad.kind));
    EXPECT_TRUE(stage_of.at(kind).count(j["stage"].get<std::string>()))
        << kind << " reported at stage " << j["stage"] << ": " << j["reason"];
    if (kind == "missing_image") {
      EXPECT_EQ(j["code"], "NotFound");
    }
    by_line.erase(bad.line);
  }
  for (const auto& [line, j] : by_line) {  // the rest: over-long samples
    EXPECT_EQ(j["stage"], "tokenize");
    EXPECT_EQ(j["code"], "ResourceExhausted");
    EXPECT_TRUE(over.count(j["sample"].get<std::uint64_t>()));
  }

  // Deterministic with failures too: batches are refilled from the next samples in order.
  LoaderConfig c8 = c;
  c8.threads = 8;
  c8.io_threads = 8;
  c8.errors.report_path.clear();
  testing::RunResult r8 = testing::run_loader(c8);
  EXPECT_EQ(r8.hashes, r.hashes);
  c8.mode = Mode::kSerial;
  EXPECT_EQ(testing::run_loader(c8).hashes, r.hashes);
}

// With failures, ranks consume different numbers of samples per batch, so each rank's state is its
// own: resuming every rank from its own state (same world size) is still exact.
TEST(LoaderErrorsTest, EachRankResumesExactlyFromItsOwnStateWithFailures) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = testing::make_dataset("ranks-broken", 48, 0.125);
  for (int r = 0; r < 2; ++r) {
    LoaderConfig c = testing::small_config(ds.data_path);
    c.rank.rank = r;
    c.rank.world_size = 2;
    c.epochs = 2;
    testing::RunResult full = testing::run_loader(c);
    ASSERT_FALSE(full.error);
    for (std::int64_t k : {1, 2, 4}) {
      testing::RunResult head = testing::run_loader(c, std::nullopt, k);
      testing::RunResult tail = testing::run_loader(c, head.state);
      std::vector<std::uint64_t> joined = head.ids;
      joined.insert(joined.end(), tail.ids.begin(), tail.ids.end());
      EXPECT_EQ(joined, full.ids) << "rank " << r << " after " << k << " batches";
      EXPECT_EQ(head.stats.failed + tail.stats.failed, full.stats.failed);
    }
  }
}

TEST(LoaderErrorsTest, StrictAndBudgetStopWithTheLastError) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = testing::make_dataset("budget", 40, 0.125);  // 5 bad
  LoaderConfig c = testing::small_config(ds.data_path);
  c.errors.report_path = ds.data_path + ".strict.jsonl";
  c.errors.strict = true;
  testing::RunResult strict = testing::run_loader(c);
  ASSERT_TRUE(strict.error);
  EXPECT_NE(strict.error->to_string().find("strict"), std::string::npos);
  EXPECT_NE(strict.error->to_string().find(ds.data_path + ":"), std::string::npos)
      << strict.error->to_string();
  std::vector<nlohmann::json> first = read_jsonl(c.errors.report_path);
  ASSERT_EQ(first.size(), 1u);
  // Strict stops with the failed sample's own code (a missing image stays NotFound), not with
  // a generic DataLoss: the code the report names for that sample.
  EXPECT_EQ(error_code_name(strict.error->code()), first[0]["code"].get<std::string>())
      << strict.error->to_string();

  c.errors.strict = false;
  c.errors.max_errors = 2;
  testing::RunResult budget = testing::run_loader(c);
  ASSERT_TRUE(budget.error);
  EXPECT_NE(budget.error->to_string().find("--max-errors 2"), std::string::npos)
      << budget.error->to_string();
  EXPECT_EQ(read_jsonl(c.errors.report_path).size(), 3u);

  c.errors.max_errors = -1;
  c.errors.max_error_rate = 0.05;
  c.errors.min_seen = 10;
  testing::RunResult rate = testing::run_loader(c);
  ASSERT_TRUE(rate.error);
  EXPECT_NE(rate.error->to_string().find("rate"), std::string::npos) << rate.error->to_string();

  // The error is sticky: the next call returns it again.
  c.errors.max_errors = 0;
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok());
  Result<std::optional<Batch>> b = (*loader)->next();
  while (b.ok() && b->has_value()) b = (*loader)->next();
  ASSERT_FALSE(b.ok());
  EXPECT_FALSE((*loader)->next().ok());
}

}  // namespace
}  // namespace stoker::pipeline
