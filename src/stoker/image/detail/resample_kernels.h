// SIMD kernels of the exact bicubic resampler (resample.cc), compiled by Google Highway for
// every x86 target and picked at run time (no -march flag needed). Integer arithmetic only, so
// every target gives the same bytes as Pillow. Thread-safe, no state.
#pragma once

#include <cstdint>

namespace stoker::image::detail {

// Rows per horizontal block; the interleaved layout is [x][row][RGB].
inline constexpr int kResampleBlockRows = 16;

// True when a fixed-tap kernel exists for `taps` (the odd sizes 5..13 bicubic produces).
bool has_fixed_kernel(int taps);

// Horizontal pass over one block of 16 rows interleaved per pixel ([x][row][RGB] = 48 bytes):
// out_rows[r][3x + c] = clip8(Σ_t il[(start[x] + t)·48 + 3r + c] · k[x·taps + t]).
void horizontal_block_fixed(int taps, const std::uint8_t* il, const int* start,
                            const std::int32_t* k, int out_w, std::uint8_t* const* out_rows);

// Vertical pass for one output row: out[i] = clip8(Σ_t rows[t][i] · k[t]), i < n.
void vertical_row_fixed(int taps, const std::uint8_t* const* rows, const std::int32_t* k, int n,
                        std::uint8_t* out);

}  // namespace stoker::image::detail
