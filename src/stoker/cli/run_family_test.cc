// `stoker run`'s loop (cli::run_loader: the code behind the command, flags to summary) with the
// test-only toy model family registered (model/testing/toy_family.h): `--model toy` runs fixed
// batches and packing end to end through the option schema, and its --batch-hashes equal those
// of a Loader made from the same flags (Settings::loader) — the run loop adds nothing
// family-specific.
#include <gtest/gtest.h>

#include <fstream>

#include "stoker/cli/options_cli.h"
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

Result<config::Settings> parse(std::vector<std::string> argv) {
  std::vector<char*> p;
  for (std::string& a : argv) p.push_back(a.data());
  bool help = false;
  return parse_command_line(static_cast<int>(p.size()), p.data(), config::kRun, &help);
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
    Result<config::Settings> settings = parse(argv);
    ASSERT_TRUE(settings.ok()) << settings.error().to_string();
    ASSERT_EQ(run_loader(*settings, {}), 0);
    const std::vector<std::string> got = lines(hashes);
    ASSERT_GE(got.size(), 3u);
    // The same flags through a Loader directly.
    const pipeline::LoaderConfig& config = settings->loader;
    EXPECT_EQ(config.model, "toy");
    EXPECT_EQ(config.model_config, nullptr) << "the toy family parses no ModelConfig";
    const pipeline::testing::RunResult want = pipeline::testing::run_loader(config);
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
