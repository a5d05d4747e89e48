// The shared helpers' contracts: a difference suppresses the ratio, the CRC is zlib's (what the
// Python peers compute), the lookup honours $STOKER_BENCH_DIR, corpora parse as documented.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "stoker/bench/corpus.h"
#include "stoker/bench/harness.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

std::string captured_finish(const Comparison& cmp, Outcome* outcome) {
  std::fflush(stdout);
  char path[] = "/tmp/stoker-bench-test-XXXXXX";
  const int fd = mkstemp(path);
  const int saved = dup(1);
  dup2(fd, 1);
  *outcome = finish(cmp, "items", "the peer", 2.5);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  fs::remove(path);
  return text;
}

TEST(HarnessTest, RatioOnlyWhenOutputsMatch) {
  Comparison same;
  same.compared(3);
  Outcome o;
  std::string text = captured_finish(same, &o);
  EXPECT_EQ(o, Outcome::kOk);
  EXPECT_NE(text.find("identical\nratio: 2.50\n"), std::string::npos) << text;

  Comparison differ;
  differ.compared(3);
  EXPECT_FALSE(differ.expect_equal(1, 2, "item 2: stoker 1, peer 2"));
  text = captured_finish(differ, &o);
  EXPECT_EQ(o, Outcome::kMismatch);
  EXPECT_EQ(text.find("ratio:"), std::string::npos) << text;
  EXPECT_NE(text.find("item 2: stoker 1, peer 2"), std::string::npos) << text;
}

TEST(HarnessTest, NothingComparedIsAMismatch) {
  Outcome o;
  const std::string text = captured_finish(Comparison{}, &o);
  EXPECT_EQ(o, Outcome::kMismatch);
  EXPECT_EQ(text.find("ratio:"), std::string::npos);
}

TEST(HarnessTest, Crc32IsZlibs) {
  // The CRC-32 check value (also Python's zlib.crc32(b"123456789")), and chaining.
  const std::string s = "123456789";
  EXPECT_EQ(crc32(s.data(), s.size()), 0xCBF43926u);
  EXPECT_EQ(crc32(s.data() + 4, 5, crc32(s.data(), 4)), 0xCBF43926u);
}

TEST(HarnessTest, BestOfKeepsTheFastestPass) {
  BestOf b;
  b.add({2.0, 3.0});
  b.add({1.0, 4.0});
  b.add({1.5, 2.5});
  EXPECT_EQ(b.cpu_s(), 1.0);
  EXPECT_EQ(b.wall_s(), 2.5);
  EXPECT_EQ(b.passes(), 3);
}

TEST(PathsTest, BenchDirFromTheEnvironmentComesFirst) {
  auto dir = TempDir::make("stoker-bench-paths");
  ASSERT_TRUE(dir.ok());
  std::ofstream(dir->path() + "/only_here.py") << "#\n";
  setenv("STOKER_BENCH_DIR", dir->path().c_str(), 1);
  auto found = find_bench_file("only_here.py");
  auto missing = find_bench_file("no_such_helper.py");
  unsetenv("STOKER_BENCH_DIR");
  ASSERT_TRUE(found.ok()) << found.error().to_string();
  EXPECT_EQ(*found, fs::path(dir->path()) / "only_here.py");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().to_string().find("STOKER_BENCH_DIR"), std::string::npos);
}

TEST(PeerTest, CapturesStdoutAndFailsOnExitStatus) {
  auto out = run_capture({"sh", "-c", "echo noise; echo '{\"a\": 1}'; echo tail"});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(last_json_line(*out), "{\"a\": 1}");
  EXPECT_FALSE(run_capture({"sh", "-c", "exit 3"}).ok());
  auto rc = run_passthrough({"sh", "-c", "exit 5"});
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(*rc, 5);
}

TEST(CorpusTest, Utf8Validation) {
  EXPECT_TRUE(valid_utf8("plain, 中文, 日本語, 😀"));
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("cut \xE4\xB8"));       // truncated
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(CorpusTest, JsonlIsOneDocumentPerLine) {
  auto dir = TempDir::make("stoker-bench-corpus");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/c.jsonl";
  std::ofstream(path) << "\"first\"\n{\"text\": \"second 中文\"}\n\n";
  auto c = file_corpus(path, 0);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_EQ(c->docs.size(), 2u);
  EXPECT_EQ(c->docs[1], "second 中文");
  std::ofstream(path) << "[1, 2]\n";
  EXPECT_FALSE(file_corpus(path, 0).ok());
}

TEST(CorpusTest, TextIsCutAtBlankLinesIntoAboutFourKilobytes) {
  auto dir = TempDir::make("stoker-bench-corpus");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/c.txt";
  {
    std::ofstream f(path);
    for (int p = 0; p < 40; ++p) f << std::string(300, 'a' + p % 26) << "\n\n";
  }
  auto c = file_corpus(path, 0);
  ASSERT_TRUE(c.ok());
  std::size_t total = 0;
  for (const auto& d : c->docs) total += d.size();
  EXPECT_EQ(total, 40u * 302);
  EXPECT_GE(c->docs.size(), 2u);
  EXPECT_GE(c->docs[0].size(), 4096u);
  auto capped = file_corpus(path, 5000);
  ASSERT_TRUE(capped.ok());
  EXPECT_LT(capped->bytes, total);
}

}  // namespace
}  // namespace stoker::bench
