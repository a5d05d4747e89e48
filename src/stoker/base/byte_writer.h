// ByteWriter: the writing side of ByteReader (byte_reader.h) — a little-endian binary message
// built in a byte vector: trivially copyable values, u64-length-prefixed strings and vectors.
// What one writes, the other reads back with the same calls in the same order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace stoker {

class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof v);
  }
  void str(std::string_view s) {
    put<std::uint64_t>(s.size());
    append(s.data(), s.size());
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(v.size());
    append(v.data(), v.size() * sizeof(T));
  }
  std::vector<std::uint8_t>& bytes() { return out_; }
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  void append(const void* p, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  std::vector<std::uint8_t> out_;
};

}  // namespace stoker
