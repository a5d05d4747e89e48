// SIMD kernels of the exact bicubic resampler (resample.cc), compiled by Google Highway for
// every x86 target and picked at run time (no -march flag needed). Integer arithmetic only, so
// every target gives the same bytes as Pillow. Thread-safe, no state.
#pragma once

#include <cstdint>

namespace stoker::image::detail {

// Rows per horizontal block; the interleaved layout is [x][row][RGB].
inline constexpr int kResampleBlockRows = 16;

// Fixed-tap kernels exist for 4..13 taps (bicubic windows: 4 for any upscale, about
// 4·scale + 1 for a downscale by `scale` ≤ 3).
inline constexpr int kMinFixedTaps = 4, kMaxFixedTaps = 13;
inline bool has_fixed_kernel(int taps) { return taps >= kMinFixedTaps && taps <= kMaxFixedTaps; }
// The fixed kernel a window of `widest` taps runs in (padded with zero weights): `widest` itself,
// or kMinFixedTaps below it; 0 above kMaxFixedTaps.
inline int fixed_kernel_taps(int widest) {
  return widest > kMaxFixedTaps ? 0 : (widest < kMinFixedTaps ? kMinFixedTaps : widest);
}

// Horizontal pass over one block of 16 rows interleaved per pixel ([x][row][RGB] = 48 bytes):
// out_rows[r][3x + c] = clip8(Σ_t il[(start[x] + t)·48 + 3r + c] · k[x·taps + t]).
void horizontal_block_fixed(int taps, const std::uint8_t* il, const int* start,
                            const std::int32_t* k, int out_w, std::uint8_t* const* out_rows);

// [x][row][RGB] ← 16 rows of w RGB pixels (il[x·48 + 3r + c] = rows[r][3x + c]); `il` must have
// 1 spare byte past w·48.
void interleave_block(const std::uint8_t* const* rows, int w, std::uint8_t* il);

// Vertical pass for one output row: out[i] = clip8(Σ_t rows[t][i] · k[t]), i < n.
void vertical_row_fixed(int taps, const std::uint8_t* const* rows, const std::int32_t* k, int n,
                        std::uint8_t* out);

}  // namespace stoker::image::detail
