// FNV-1a, the one non-cryptographic hash of stoker: batch hashes (`--batch-hashes`, tests), the
// cluster's flag fingerprint, a packing state's plan id, cache file names, jinja's dict index.
// 64-bit (offset 14695981039346656037, prime 1099511628211) and 32-bit (2166136261, 16777619)
// forms; `seed` chains calls (pass the previous hash). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stoker {

inline constexpr std::uint64_t kFnv64Offset = 14695981039346656037ull;
inline constexpr std::uint32_t kFnv32Offset = 2166136261u;

inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t seed = kFnv64Offset) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = seed;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

inline std::uint64_t fnv1a64(std::string_view s, std::uint64_t seed = kFnv64Offset) {
  return fnv1a64(s.data(), s.size(), seed);
}

inline std::uint32_t fnv1a32(std::string_view s, std::uint32_t seed = kFnv32Offset) {
  std::uint32_t h = seed;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// One step over a whole 32-bit value (not its bytes): the tokenizer bench's digest of token ids,
// as its JavaScript peer computes it.
inline std::uint32_t fnv1a32_step(std::uint32_t h, std::uint32_t value) {
  return (h ^ value) * 16777619u;
}

}  // namespace stoker
