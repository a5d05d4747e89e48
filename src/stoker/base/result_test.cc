#include "stoker/base/result.h"

#include <gtest/gtest.h>

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

TEST(JsonTextTest, EscapesControlAndQuotes) {
  EXPECT_EQ(json_string("a\"b\\c\n\t\x01é"), "\"a\\\"b\\\\c\\n\\t\\u0001é\"");
}

}  // namespace
}  // namespace stoker
