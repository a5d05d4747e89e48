// `stoker run`'s loop (cli::run_loader: the code behind the command, flags to summary) with the
// test-only toy model family registered (model/testing/toy_family.h): `--model toy` runs fixed
// batches and packing end to end, and its --batch-hashes equal those of a Loader made from the
// same flags (run_config) — the run loop adds nothing family-specific.
#include <gtest/gtest.h>

#include <fstream>

#include "stoker/cli/loader_flags.h"
#include "stoker/cli/run_loop.h"
#include "stoker/model/testing/toy_family.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::cli {

// main.cc's, which this test does not link (it links the run loop only).
int report(const char* cmd, const Error& error) {
  std::fprintf(stderr, "stoker %s: %s\n", cmd, error.to_string().c_str());
  return error.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

namespace {

std::vector<std::string> lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

Result<Args> parse(std::vector<std::string> argv) {
  std::vector<char*> p;
  for (std::string& a : argv) p.push_back(a.data());
  return Args::parse(static_cast<int>(p.size()), p.data(), run_value_flags(), run_switch_flags(),
                     loader_repeat_flags());
}

TEST(RunFamilyTest, StokerRunRunsTheToyFamily) {
  STOKER_REQUIRE_TOKENIZER();
  static const bool once = (model::register_family(&model::testing::toy_family()), true);
  (void)once;
  const synth::SynthResult ds = pipeline::testing::make_dataset("runtoy", 16, 0.1, 96);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--packing", "--max-tokens", "2048",
                                                             "--pack-window", "8"}}) {
    const std::string hashes = ::testing::TempDir() + "runtoy-hashes.txt";
    std::vector<std::string> argv = {ds.data_path, "--model", "toy", "--tokenizer",
                                     pipeline::testing::tokenizer_dir(), "--batch-size", "4",
                                     "--threads", "2", "--quiet", "--max-error-rate", "1",
                                     "--arena-mb", "64", "--batch-hashes", hashes};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Result<Args> args = parse(argv);
    ASSERT_TRUE(args.ok()) << args.error().to_string();
    ASSERT_EQ(run_loader(*args, {}), 0);
    const std::vector<std::string> got = lines(hashes);
    ASSERT_GE(got.size(), 3u);
    // The same flags through a Loader directly.
    Result<pipeline::LoaderConfig> config = run_config(*args);
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->model, "toy");
    const pipeline::testing::RunResult want = pipeline::testing::run_loader(*config);
    ASSERT_FALSE(want.error) << want.error->to_string();
    std::vector<std::string> want_hex;
    for (std::uint64_t h : want.hashes) {
      char buf[20];
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
      want_hex.push_back(buf);
    }
    EXPECT_EQ(got, want_hex);
  }
}

}  // namespace
}  // namespace stoker::cli
