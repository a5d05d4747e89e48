#include "stoker/base/elide.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "stoker/base/result.h"

namespace stoker {
namespace {

// Independent of elide.cc: is `s` well-formed UTF-8 (RFC 3629 lengths, no overlongs checked)?
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(ElideTest, ShortTextIsUnchanged) {
  EXPECT_EQ(elide_middle("http://h/a.png", 200), "http://h/a.png");
  EXPECT_EQ(elide_middle(std::string(200, 'x'), 200), std::string(200, 'x'));
  EXPECT_EQ(elide_middle("", 0), "");
}

TEST(ElideTest, KeepsHeadAndTailAndSaysHowMuchWasCut) {
  const std::string url = "http://host.example/" + std::string(100000, 'a') + "/name.png";
  const std::string e = elide_middle(url, 200);
  EXPECT_LE(e.size(), 200u);
  EXPECT_EQ(e.rfind("http://host.example/", 0), 0u) << e;
  EXPECT_EQ(e.substr(e.size() - 9), "/name.png");
  // The number printed is exactly what is missing.
  const std::size_t open = e.find("…["), close = e.find(" bytes]…");
  ASSERT_NE(open, std::string::npos);
  const std::size_t cut = std::stoul(e.substr(open + 4, close - open - 4));
  const std::size_t marker = close + std::string(" bytes]…").size() - open;
  EXPECT_EQ(e.size() - marker + cut, url.size());
}

TEST(ElideTest, NeverSplitsAUtf8Character) {
  std::mt19937 rng(7);
  const char* pieces[] = {"a", "é", "€", "😀", "/"};
  for (int round = 0; round < 500; ++round) {
    std::string s;
    const int n = 20 + static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) s += pieces[rng() % 5];
    const std::size_t max = 64 + rng() % 200;
    const std::string e = elide_middle(s, max);
    if (s.size() <= max) {
      EXPECT_EQ(e, s);
    } else {
      EXPECT_LE(e.size(), max) << s;
    }
    EXPECT_TRUE(valid_utf8(e)) << e;
  }
}

TEST(ElideTest, TinyMaxStillBounded) {
  const std::string e = elide_middle(std::string(1000, 'z'), 1);
  EXPECT_LE(e.size(), 64u);
  EXPECT_NE(e.find("bytes]"), std::string::npos);
}

TEST(ElideTest, ErrorMessagesAndContextsAreBounded) {
  const std::string huge(5 << 20, 'A');  // a 5 MB server body pasted into a message
  Error e = permission_denied("GET http://h/x: HTTP 403: " + huge);
  e.with_context("image 0").with_context(huge);
  EXPECT_LE(e.to_string().size(), 3 * kMaxErrorTextBytes + 16);
  EXPECT_NE(e.to_string().find("image 0"), std::string::npos);
  EXPECT_NE(e.message().find("HTTP 403"), std::string::npos);
}

}  // namespace
}  // namespace stoker
