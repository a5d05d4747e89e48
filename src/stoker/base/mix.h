// mix64: splitmix64's output function, a bijective 64-bit mixer. The one definition behind every
// deterministic stream in stoker (sample order, retry jitter, synthetic data), so a seed means the
// same thing on every compiler and platform. Changing it changes pinned sample orders. Pure.
#pragma once

#include <cstdint>

namespace stoker {

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace stoker
