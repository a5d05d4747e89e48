// Args: flags are parsed over the whole value and range-checked against the field they go into;
// errors name the flag and the value. Regression: `--batch-size 99999999999` used to be accepted
// (strtoll, then a cast to int wrapped it).
#include "stoker/cli/args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace stoker::cli {
namespace {

// argv from a list of strings (Args::parse takes char**).
Result<Args> parse(std::initializer_list<const char*> argv, std::set<std::string> values = {"n"},
                   std::set<std::string> bools = {"quiet"},
                   std::set<std::string> repeats = {"root"}) {
  std::vector<std::string> owned(argv.begin(), argv.end());
  std::vector<char*> ptrs;
  for (std::string& s : owned) ptrs.push_back(s.data());
  return Args::parse(static_cast<int>(ptrs.size()), ptrs.data(), values, bools, repeats);
}

// The error message of `r`; "" when it holds a value.
template <typename T>
std::string error_of(const Result<T>& r) {
  return r.ok() ? "" : r.error().to_string();
}

TEST(ArgsTest, IntOverflowingTheFieldIsAnErrorNamingFlagAndValue) {
  auto a = parse({"--n", "99999999999"});
  ASSERT_TRUE(a.ok());
  Result<int> v = a->get_int<int>("n", 8, 1);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(error_of(v).find("--n must be an integer in [1, 2147483647], got '99999999999'"),
            std::string::npos)
      << error_of(v);
  // The same text fits an int64 field.
  EXPECT_EQ(*a->get_int<std::int64_t>("n", 8, 1), 99999999999);
}

TEST(ArgsTest, IntBoundsAreInclusiveAndDefaultToTheType) {
  auto a = parse({"--n=2147483647"});
  EXPECT_EQ(*a->get_int<int>("n", 0), std::numeric_limits<int>::max());
  auto b = parse({"--n=2147483648"});
  EXPECT_FALSE(b->get_int<int>("n", 0).ok());
  auto c = parse({"--n=-2147483648"});
  EXPECT_EQ(*c->get_int<int>("n", 0), std::numeric_limits<int>::min());
  auto d = parse({"--n", "9223372036854775808"});  // one past INT64_MAX
  EXPECT_FALSE(d->get_int<std::int64_t>("n", 0).ok());
  auto e = parse({"--n", "5"});
  EXPECT_EQ(*e->get_int<int>("n", 0, 5, 5), 5);
  EXPECT_FALSE(e->get_int<int>("n", 0, 6, 9).ok());
  EXPECT_FALSE(e->get_int<int>("n", 0, 0, 4).ok());
}

TEST(ArgsTest, IntMustBeTheWholeValue) {
  for (const char* bad : {"8x", " 8", "8 ", "+8", "0x10", "1e3", "8.0", "", "-", "--8", "٨"}) {
    std::string flag = std::string("--n=") + bad;
    auto a = parse({flag.c_str()});
    ASSERT_TRUE(a.ok()) << bad;
    Result<long long> v = a->get_int<long long>("n", 0);
    EXPECT_FALSE(v.ok()) << "'" << bad << "' was accepted as " << (v.ok() ? *v : 0);
  }
  auto neg = parse({"--n", "-12"});
  EXPECT_EQ(*neg->get_int<long long>("n", 0), -12);
}

TEST(ArgsTest, UnsignedRefusesNegativesInsteadOfWrapping) {
  auto a = parse({"--n", "-1"});
  Result<std::uint64_t> v = a->get_int<std::uint64_t>("n", 0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(error_of(v).find("[0, 18446744073709551615], got '-1'"), std::string::npos);
  auto b = parse({"--n", "18446744073709551615"});
  EXPECT_EQ(*b->get_int<std::uint64_t>("n", 0), std::numeric_limits<std::uint64_t>::max());
  auto c = parse({"--n", "18446744073709551616"});
  EXPECT_FALSE(c->get_int<std::uint64_t>("n", 0).ok());
}

TEST(ArgsTest, FallbackIsReturnedUncheckedWhenTheFlagIsAbsent) {
  auto a = parse({});
  // -1 "auto" is outside [1, ...]: a sentinel default is the caller's business.
  EXPECT_EQ(*a->get_int<int>("n", -1, 1), -1);
  EXPECT_EQ(*a->get_double("n", -1, 0, 1), -1);
  EXPECT_EQ(*a->get_bytes("n", 7, 10, 20), 7);
}

TEST(ArgsTest, DoublesAreFiniteWholeAndInRange) {
  for (const char* bad : {"nan", "inf", "-inf", "1e999", "0.5x", "", "0x1p3", " 0.5", "1,5"}) {
    std::string flag = std::string("--n=") + bad;
    auto a = parse({flag.c_str()});
    EXPECT_FALSE(a->get_double("n", 0, -1e300, 1e300).ok()) << bad;
  }
  auto a = parse({"--n", "1.5"});
  Result<double> v = a->get_double("n", 0, 0, 1);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(error_of(v).find("--n must be a number in [0, 1], got '1.5'"), std::string::npos)
      << error_of(v);
  EXPECT_DOUBLE_EQ(*a->get_double("n", 0, 0, 2), 1.5);
  auto b = parse({"--n", "1e-3"});
  EXPECT_DOUBLE_EQ(*b->get_double("n", 0, 0, 1), 0.001);
}

TEST(ArgsTest, ByteSizesTakeBinarySuffixes) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::pair<const char*, std::int64_t> cases[] = {
      {"4096", 4096},          {"0", 0},
      {"1K", 1024},            {"1k", 1024},
      {"16KiB", 16 << 10},     {"256M", std::int64_t{256} << 20},
      {"16MiB", 16 << 20},     {"16mib", 16 << 20},
      {"1G", 1 << 30},         {"3GiB", std::int64_t{3} << 30},
      {"2T", std::int64_t{2} << 40}, {"5B", 5},
      {"8388607T", std::int64_t{8388607} << 40},  // the largest T that fits an int64
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(*parse_bytes("--x", text, 0, kMax), want) << text;
  }
}

TEST(ArgsTest, ByteSizesRefuseJunkAmbiguityAndOverflow) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (const char* bad : {"1.5G", "1MB", "1GB", "1 M", "M", "", "-1", "+1", "1KiBx", "1Mi",
                          "8388608T",               // 2^63: overflows the shift
                          "9223372036854775808",    // INT64_MAX + 1
                          "99999999999999999999G",  // the digits alone overflow
                          "18014398509481984K"}) {  // 2^54 KiB = 2^64
    Result<std::int64_t> v = parse_bytes("--max-object-bytes", bad, 0, kMax);
    EXPECT_FALSE(v.ok()) << "'" << bad << "' was accepted as " << (v.ok() ? *v : 0);
  }
  Result<std::int64_t> v = parse_bytes("--max-record-bytes", "5G", 1, std::int64_t{4} << 30);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(error_of(v).find("--max-record-bytes must be a byte count in [1, 4294967296]"),
            std::string::npos)
      << error_of(v);
  EXPECT_NE(error_of(v).find("got '5G'"), std::string::npos);
  EXPECT_FALSE(parse_bytes("--x", "0", 1, kMax).ok());
}

TEST(ArgsTest, RepeatableFlagsKeepEveryValueInOrder) {
  auto a = parse({"--root", "A", "data.jsonl", "--root=B", "--root", "C"});
  ASSERT_TRUE(a.ok()) << error_of(a);
  EXPECT_EQ(a->get_all("root"), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_TRUE(a->has("root"));
  EXPECT_EQ(a->positional(), std::vector<std::string>{"data.jsonl"});
  auto none = parse({});
  EXPECT_TRUE(none->get_all("root").empty());
  EXPECT_FALSE(none->has("root"));
}

TEST(ArgsTest, SingleValuedFlagGivenTwiceIsAnError) {
  auto a = parse({"--n", "4", "--n", "8"});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(error_of(a).find("--n given twice ('4', then '8')"), std::string::npos)
      << error_of(a);
  EXPECT_TRUE(parse({"--quiet", "--quiet"}).ok());  // a switch said twice is still one switch
}

TEST(ArgsTest, AFlagIsNotTakenAsTheValueOfTheOneBefore) {
  auto a = parse({"--n", "--quiet"});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(error_of(a).find("--n needs a value, got the flag --quiet"), std::string::npos)
      << error_of(a);
  auto b = parse({"--n=--odd"});  // spelled with '=', such a value is possible
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->get("n"), "--odd");
  auto c = parse({"--n", "-5"});  // a negative number is a value, not a flag
  EXPECT_EQ(*c->get_int<int>("n", 0), -5);
}

TEST(ArgsTest, UnknownFlagsMissingValuesAndValuedSwitchesAreErrors) {
  EXPECT_NE(error_of(parse({"--batchsize", "4"})).find("unknown flag --batchsize"),
            std::string::npos);
  EXPECT_NE(error_of(parse({"--n"})).find("--n needs a value"), std::string::npos);
  EXPECT_NE(error_of(parse({"--root"})).find("--root needs a value"), std::string::npos);
  EXPECT_NE(error_of(parse({"--quiet=yes"})).find("--quiet takes no value"), std::string::npos);
  EXPECT_EQ(parse({"--quiet=yes"}).error().code(), ErrorCode::kInvalidArgument);
}

TEST(ArgsTest, ShownValueStaysOnOneLine) {
  auto a = parse({"--n=12\n34"});
  Result<int> v = a->get_int<int>("n", 0);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(error_of(v).find('\n'), std::string::npos) << error_of(v);
}

TEST(ArgsTest, ParsersNameTheirSource) {
  Result<long long> v = parse_int("$WORLD_SIZE", "abc", 1, 4096);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(error_of(v).find("$WORLD_SIZE must be an integer in [1, 4096], got 'abc'"),
            std::string::npos);
}

}  // namespace
}  // namespace stoker::cli
