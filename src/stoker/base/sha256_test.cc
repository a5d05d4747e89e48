#include "stoker/base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

// FIPS 180-4 / NIST CSRC example vectors (independent of this code).
TEST(Sha256Test, MatchesTheNistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Any split of the input into update() calls gives the same digest (block boundaries, padding
// at 55/56/63/64 bytes).
TEST(Sha256Test, SplitsDoNotChangeTheDigest) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  for (std::size_t n : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 127u, 128u, 300u}) {
    const std::string whole = sha256_hex(data.substr(0, n));
    for (std::size_t cut = 0; cut <= n; cut += 13) {
      Sha256 h;
      h.update(data.data(), cut);
      h.update(data.data() + cut, n - cut);
      EXPECT_EQ(h.finish_hex(), whole) << n << " " << cut;
    }
  }
}

}  // namespace
}  // namespace stoker
