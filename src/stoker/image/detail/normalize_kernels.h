// SIMD kernel of normalise (processor.cc): interleaved RGB uint8 → three planes of
// float32 (or bfloat16) values, compiled by Google Highway for every x86 target and picked at run
// time. It computes the slow processor's IEEE arithmetic lane by lane (float64 multiply, round to
// float32, float32 subtract and divide; no reciprocal, no FMA), so every target gives the bits
// of the scalar formula. Thread-safe, no state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker::image::detail {

// Slack, in pixels, that callers leave after the n pixels: the input must be readable for
// 3·(n + kNormalizePad) bytes and each output plane writable for n + kNormalizePad values
// (whole vectors are processed; values past n are garbage).
inline constexpr int kNormalizePad = 256;

struct NormalizeParams {
  double rescale_factor = 1.0 / 255.0;
  float mean[3] = {0, 0, 0};
  float std[3] = {1, 1, 1};
  bool do_rescale = true;
  bool do_normalize = true;
  // Fast form (rescale and normalise both on): all-float32 arithmetic with FMA corrections —
  // v = fma(x, rf_hi, x·rf_lo) for the float64 multiply, then q = d·(1/std) refined by the FMA
  // residual (Markstein) `fast` times (1 or 2) for the division; 0 = the exact form. Usually
  // bit-identical, but only ever used after verify_fast_normalize() has compared the running
  // target's kernel against the exact formula for all 256 inputs of every channel (the input is
  // a byte: that is every case).
  int fast = 0;
};

// The cheapest fast form (1, then 2 corrections) whose kernel on this CPU's dispatch target
// reproduces the exact scalar formula bit for bit on all 256 byte values of each channel; 0 if
// none does, or the target has no native FMA, or rescale/normalise is off.
int verify_fast_normalize(const NormalizeParams& p);

// out[c][i] = value(rgb[3i + c]) for i < n, where value(x) = v or (v − mean[c]) / std[c] with
// v = float32(float64(x) · rescale_factor) or float32(x).
void normalize_rgb_f32(const std::uint8_t* rgb, int n, const NormalizeParams& p,
                       float* const out[3]);

// As normalize_rgb_f32, then bfloat16 with round-to-nearest-even.
void normalize_rgb_bf16(const std::uint8_t* rgb, int n, const NormalizeParams& p,
                        std::uint16_t* const out[3]);

// Non-temporal copy of `bytes` (a multiple of 16) to a 16-byte-aligned `dst`, with the widest
// streaming stores the CPU has; the caller fences (_mm_sfence) before publishing.
void stream_copy(void* dst, const void* src, size_t bytes);

}  // namespace stoker::image::detail
