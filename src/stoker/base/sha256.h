// SHA-256 (FIPS 180-4), streaming: the content digest the manifest cache records at download and
// checks before every reuse (a file of the right size is not the right file). Plain C++, no
// dependency; ~200-300 MB/s per core, enough for manifests. Not constant-time (digests of public
// data only). A Sha256 object is single-threaded; the free function is thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stoker {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  // The digest; the object is spent afterwards (call reset() to reuse it).
  std::array<std::uint8_t, 32> finish();
  std::string finish_hex();  // 64 lowercase hex digits
  void reset();

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_{};
  std::array<std::uint8_t, 64> buf_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace stoker
