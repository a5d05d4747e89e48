#include "stoker/base/byte_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace stoker {
namespace {

// A message built byte by byte here (not with either wire's writer): u32 7, u64 length 3 + "abc",
// u64 count 2 + two u16.
std::vector<std::uint8_t> message() {
  std::vector<std::uint8_t> m;
  auto le = [&](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) m.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le(7, 4);
  le(3, 8);
  m.insert(m.end(), {'a', 'b', 'c'});
  le(2, 8);
  le(0x0102, 2);
  le(0xfffe, 2);
  return m;
}

TEST(ByteReaderTest, ReadsEveryFieldAndIsDone) {
  const std::vector<std::uint8_t> m = message();
  ByteReader r(m);
  std::uint32_t a = 0;
  std::string s;
  std::vector<std::uint16_t> v;
  ASSERT_TRUE(r.get(&a) && r.str(&s) && r.vec(&v));
  EXPECT_EQ(a, 7u);
  EXPECT_EQ(s, "abc");
  EXPECT_EQ(v, (std::vector<std::uint16_t>{0x0102, 0xfffe}));
  EXPECT_TRUE(r.done());
}

TEST(ByteReaderTest, EveryTruncationFailsAndStaysFailed) {
  const std::vector<std::uint8_t> m = message();
  for (std::size_t n = 0; n < m.size(); ++n) {
    ByteReader r(std::span<const std::uint8_t>(m.data(), n));
    std::uint32_t a = 0;
    std::string s;
    std::vector<std::uint16_t> v;
    const bool all = r.get(&a) && r.str(&s) && r.vec(&v);
    EXPECT_FALSE(all) << n;
    EXPECT_FALSE(r.done()) << n;
    std::uint8_t byte = 0;
    EXPECT_FALSE(r.get(&byte)) << "a failure is sticky, " << n;
  }
}

TEST(ByteReaderTest, HostileLengthsFailWithoutAllocating) {
  for (std::uint64_t n : {std::uint64_t{4}, std::numeric_limits<std::uint64_t>::max(),
                          std::numeric_limits<std::uint64_t>::max() / 2 + 1}) {
    std::vector<std::uint8_t> m(8);
    for (int i = 0; i < 8; ++i) m[i] = static_cast<std::uint8_t>(n >> (8 * i));
    m.insert(m.end(), {1, 2, 3});  // 3 bytes follow, fewer than any n above asks
    ByteReader a(m);
    std::string s;
    EXPECT_FALSE(a.str(&s)) << n;
    ByteReader b(m);
    std::vector<std::uint32_t> v;  // n × 4 overflows for the large n: must not wrap around
    EXPECT_FALSE(b.vec(&v)) << n;
    EXPECT_TRUE(v.empty());
  }
}

TEST(ByteReaderTest, TrailingBytesAreNotDone) {
  std::vector<std::uint8_t> m = message();
  m.push_back(0);
  ByteReader r(m);
  std::uint32_t a = 0;
  std::string s;
  std::vector<std::uint16_t> v;
  ASSERT_TRUE(r.get(&a) && r.str(&s) && r.vec(&v));
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.done());
}

}  // namespace
}  // namespace stoker
