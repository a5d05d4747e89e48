// ByteReader: bounds-checked reads of a little-endian binary message from another process or host
// (the shm hand-off wire, the cluster wire) — every length in the message is hostile: a read
// past the end, a length prefix larger than the bytes left, or a count whose byte size overflows
// fails, and a failure is sticky (done() stays false). Values are copied out with memcpy (no
// alignment assumption). Host byte order: both wires run between processes of one build on
// x86-64 / little-endian hosts.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace stoker {

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  // One trivially copyable value.
  template <typename T>
  bool get(T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!ok_ || left() < sizeof(T)) return fail();
    std::memcpy(v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  // Exactly n bytes as a string.
  bool bytes(std::uint64_t n, std::string* s) {
    if (!ok_ || n > left()) return fail();
    s->assign(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return true;
  }
  // A u64 length, then that many bytes.
  bool str(std::string* s) {
    std::uint64_t n = 0;
    return get(&n) && bytes(n, s);
  }
  // A u64 count, then that many trivially copyable elements.
  template <typename T>
  bool vec(std::vector<T>* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::uint64_t n = 0;
    if (!get(&n) || n > left() / sizeof(T)) return fail();
    v->resize(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(v->data(), bytes_.data() + at_, n * sizeof(T));  // data() may be null at 0
    at_ += static_cast<std::size_t>(n) * sizeof(T);
    return true;
  }

  std::size_t left() const { return bytes_.size() - at_; }
  bool ok() const { return ok_; }
  // Every read succeeded and every byte was read (trailing bytes are a broken message).
  bool done() const { return ok_ && at_ == bytes_.size(); }

 private:
  bool fail() {
    ok_ = false;
    return false;
  }
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace stoker
