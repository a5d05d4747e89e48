#include "stoker/base/result.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "stoker/base/file.h"
#include "stoker/base/json_text.h"

namespace stoker {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("not positive: " + std::to_string(x));
  return x;
}

Result<int> doubled(int x) {
  STOKER_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

TEST(ResultTest, CarriesValueOrError) {
  EXPECT_EQ(*doubled(4), 8);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "not positive: -1");
}

TEST(ResultTest, ContextChainsOutermostFirst) {
  Error e = data_loss("truncated");
  e.with_context("decoding a.png").with_context("record 7");
  EXPECT_EQ(e.to_string(), "record 7: decoding a.png: truncated");
  EXPECT_EQ(e.message(), "truncated");
}

TEST(FileTest, MissingFileIsNotFound) {
  auto r = read_file("/nonexistent/stoker/file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().to_string().find("/nonexistent/stoker/file"), std::string::npos);
}

TEST(FileTest, RoundTrips) {
  std::string path = ::testing::TempDir() + "/stoker_file_test.bin";
  ASSERT_TRUE(write_text_file(path, "hello\0world").ok());
  auto r = read_text_file(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "hello");
}

// Model-folder files and dataset metadata are input: a FIFO put where config.json should be
// must not hang the run, and a huge file must not be read whole.
TEST(FileTest, RefusesNonRegularFilesWithoutBlockingAndBoundsSize) {
  const std::string dir = ::testing::TempDir() + "/stoker_file_test_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/config.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = read_text_file(fifo);  // no writer: an open without O_NONBLOCK would block forever
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("not a regular file"), std::string::npos) << r.error().message();
  EXPECT_FALSE(read_file(dir).ok());  // a folder
  EXPECT_EQ(read_text_file("/dev/zero").error().code(), ErrorCode::kInvalidArgument);

  const std::string big = dir + "/tokenizer.json";
  ASSERT_TRUE(write_text_file(big, std::string(4097, 'x')).ok());
  auto over = read_text_file(big, 4096);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(over.error().message().find("4097 bytes"), std::string::npos) << over.error().message();
  auto at = read_file(big, 4097);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->size(), 4097u);
  std::filesystem::remove_all(dir);
}

TEST(JsonTextTest, EscapesControlAndQuotes) {
  EXPECT_EQ(json_string("a\"b\\c\n\t\x01é"), "\"a\\\"b\\\\c\\n\\t\\u0001é\"");
}

}  // namespace
}  // namespace stoker
