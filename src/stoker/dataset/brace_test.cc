// Brace expansion against Python's braceexpand 0.1.7 (Debian python3-braceexpand, the library
// webdataset and Energon call) on hand-picked and random patterns; the name cap.
#include "stoker/dataset/brace.h"

#include <gtest/gtest.h>

#include <random>

#include "stoker/dataset/sources_test_util.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

TEST(BraceTest, ShardListsAsUsersWriteThem) {
  auto r = brace_expand("shards/train-{000..003}.tar");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"shards/train-000.tar", "shards/train-001.tar",
                                          "shards/train-002.tar", "shards/train-003.tar"}));
  EXPECT_EQ(*brace_expand("a{1..3..2}{x,y}"), (std::vector<std::string>{"a1x", "a1y", "a3x", "a3y"}));
  EXPECT_EQ(*brace_expand("{08..11}"), (std::vector<std::string>{"08", "09", "10", "11"}));
  EXPECT_EQ(*brace_expand("{2..-1}"), (std::vector<std::string>{"2", "1", "0", "-1"}));
  EXPECT_EQ(*brace_expand("p{a,b{1,2}}q"), (std::vector<std::string>{"paq", "pb1q", "pb2q"}));
  EXPECT_EQ(*brace_expand("{x}"), (std::vector<std::string>{"{x}"}));
  EXPECT_EQ(*brace_expand("a\\{1,2\\}"), (std::vector<std::string>{"a{1,2}"}));
  EXPECT_EQ(*expand_shard_list("a-{0..1}.tar::b.tar"), (std::vector<std::string>{"a-0.tar", "a-1.tar", "b.tar"}));
}

TEST(BraceTest, CapIsCheckedBeforeExpanding) {
  auto huge = brace_expand("shard-{000000..999999}.tar");  // a million names
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message().find("expands to 1000000 names, over the cap of 262144"), std::string::npos)
      << huge.error().to_string();
  auto absurd = brace_expand("{0..9223372036854775806}{0..9223372036854775806}");
  ASSERT_FALSE(absurd.ok());
  EXPECT_NE(absurd.error().message().find("more than 2^64"), std::string::npos) << absurd.error().to_string();
  EXPECT_EQ(*brace_count("{0..9}{a,b,c}"), 30u);
  EXPECT_FALSE(brace_expand("{1..99999999999999999999}").ok());  // beyond 64 bits
  EXPECT_FALSE(brace_expand("a{b").ok());
  EXPECT_FALSE(expand_shard_list("{0..9}::{0..9}", 15).ok());
  EXPECT_FALSE(brace_expand(std::string(1000, '{') + std::string(1000, '}')).ok());  // nesting cap
}

TEST(BraceTest, MatchesPythonBraceexpand) {
  if (!testing::have_python_module("braceexpand")) GTEST_SKIP() << "needs python3-braceexpand";
  std::vector<std::string> patterns = {
      "", "a", "{}", "{,}", "{a}", "{a,}", "{,a}", "x{a,b}y{c,d}z", "{1..3}", "{3..1}", "{-3..2}",
      "{-03..2}", "{0..10..3}", "{10..0..-3}", "{0..0}", "{-0..3}", "{00..3}", "{a..e}", "{e..a}",
      "{A..c}", "{z..A..5}", "{a..a}", "{A..A}", "{1..5..0}", "{1,{2,{3,4}}}", "{{1,2}}", "{{1..2}}",
      "{1..2}{a..b}{,x}", "\\{1,2}", "{1\\,2}", "{1,2\\}", "a\\\\{1,2}", "{1}{2}", "}{", "{a,b}}{",
      "file{001..010..4}.tar", "{a,b,c}{,}", "{1..3}-{07..9}", "{x..z}{1..2}", "{-1..-3}", "{7..07}",
  };
  std::mt19937 rng(7);
  const std::string alphabet = "{},.a0-1\\z";
  for (int i = 0; i < 400; ++i) {
    std::string p;
    const int len = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < len; ++k) p += alphabet[rng() % alphabet.size()];
    patterns.push_back(p);
  }
  TempDir dir;
  std::string input;
  for (const auto& p : patterns) input += p + "\n";
  const std::string file = dir.write("patterns.txt", input);
  const std::string out = testing::python(dir, R"PY(
import sys, braceexpand
for p in open(sys.argv[1]).read().split("\n")[:-1]:
    try:
        r = list(braceexpand.braceexpand(p))
        print("OK " + "\x1f".join(r))
    except braceexpand.UnbalancedBracesError:
        print("ERR")
)PY", file);
  std::istringstream lines(out);
  std::string line;
  int errors = 0;
  for (const auto& p : patterns) {
    ASSERT_TRUE(std::getline(lines, line));
    auto r = brace_expand(p);
    std::string ours;
    if (r.ok()) {
      ours = "OK ";
      for (std::size_t k = 0; k < r->size(); ++k) ours += (k ? "\x1f" : "") + (*r)[k];
    } else {
      ours = "ERR";
      ++errors;
    }
    EXPECT_EQ(ours, line) << "pattern '" << p << "'";
  }
  EXPECT_GT(errors, 10);  // the random set exercises the unbalanced case too
}

}  // namespace
}  // namespace stoker::dataset
