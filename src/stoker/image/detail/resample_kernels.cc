// Highway kernels for resample.cc; this file is compiled once per SIMD target through
// hwy/foreach_target.h. Sums start at 2^21 (rounding), taps are Pillow's 22-bit fixed point,
// and the result is (sum >> 22) saturated to 0..255: DemoteTo's saturation is Pillow's clip8.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stoker/image/detail/resample_kernels.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <cstring>

#include "stoker/image/detail/resample_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace stoker::image::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kShift = 22;
constexpr std::int32_t kHalf = 1 << (kShift - 1);
constexpr int kRows = 16;            // rows per block (resample.cc kBlockRows)
constexpr int kLanes = kRows * 3;  // interleaved bytes per pixel column

// At most 16 int32 lanes: 48 must be a multiple of the vector length.
using D32 = hn::CappedTag<std::int32_t, 16>;

// (This file is included once per target: the switch is redefined each time.)
#undef STOKER_RESAMPLE_AVX512
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define STOKER_RESAMPLE_AVX512 1
// AVX-512 block transposes between row-major RGB and the [x][row][RGB] interleaved layout: 16
// pixels × 16 rows at a time as a 16×16 transpose of 32-bit RGB0 elements, instead of 256
// separate 4-byte copies (which, on the output side, also stalled on store forwarding).
constexpr __mmask64 kMask48 = 0x0000FFFFFFFFFFFFull;

// m[i] lane j ↔ m[j] lane i (64 shuffles).
HWY_INLINE void Transpose16x16(__m512i m[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(m[2 * i], m[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(m[2 * i], m[2 * i + 1]);
  }
  // u[4i + e], 128-bit lane L = column 4L + e of rows 4i..4i+3.
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Per e, a 4×4 transpose of 128-bit lanes among u[e], u[4+e], u[8+e], u[12+e].
  for (int e = 0; e < 4; ++e) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xEE);
    const __m512i y0 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44);
    const __m512i y1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xEE);
    m[e] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    m[4 + e] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
    m[8 + e] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    m[12 + e] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
  }
}

// 16 RGB pixels (bytes 0..47) → 16 dwords RGB0.
HWY_INLINE __m512i ExpandRgb(__m512i v) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0);
  const __m512i bytes = _mm512_set4_epi32(static_cast<int>(0x800B0A09), static_cast<int>(0x80080706),
                                          static_cast<int>(0x80050403), static_cast<int>(0x80020100));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(lanes, v), bytes);
}

// 16 dwords RGB0 → 16 RGB pixels in bytes 0..47.
HWY_INLINE __m512i CompressRgb(__m512i v) {
  const __m512i bytes = _mm512_set4_epi32(static_cast<int>(0x80808080), static_cast<int>(0x0E0D0C0A),
                                          static_cast<int>(0x09080605), static_cast<int>(0x04020100));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0);
  return _mm512_permutexvar_epi32(lanes, _mm512_shuffle_epi8(v, bytes));
}
#else
#define STOKER_RESAMPLE_AVX512 0
#endif

// [x][row][channel] ← kRows rows of RGB; `il` must have 1 spare byte past w·kLanes.
void InterleaveRows(const std::uint8_t* const* rows, int w, std::uint8_t* il) {
  int x = 0;
#if STOKER_RESAMPLE_AVX512
  for (; x + 16 <= w; x += 16) {
    __m512i m[16];
    for (int r = 0; r < kRows; ++r) {
      m[r] = ExpandRgb(_mm512_maskz_loadu_epi8(kMask48, rows[r] + 3 * x));
    }
    Transpose16x16(m);  // m[j] = pixel x + j of rows 0..15
    for (int j = 0; j < 16; ++j) {
      _mm512_mask_storeu_epi8(il + static_cast<size_t>(x + j) * kLanes, kMask48, CompressRgb(m[j]));
    }
  }
#endif
  // The 4-byte copies overlap: each writes one byte of the next slot, which the next copy (or
  // the next column) overwrites; the last column copies 3 bytes so no source row is over-read.
  for (; x < w - 1; ++x) {
    std::uint8_t* d = il + static_cast<size_t>(x) * kLanes;
    for (int r = 0; r < kRows; ++r) std::memcpy(d + r * 3, rows[r] + x * 3, 4);
  }
  if (x < w) {
    std::uint8_t* d = il + static_cast<size_t>(x) * kLanes;
    for (int r = 0; r < kRows; ++r) std::memcpy(d + r * 3, rows[r] + x * 3, 3);
  }
}

template <int N>
HWY_INLINE void HorizontalT(const std::uint8_t* HWY_RESTRICT il, const int* start,
                            const std::int32_t* k, int out_w, std::uint8_t* const* out_rows) {
  const D32 d;
  const hn::Rebind<std::uint8_t, D32> d8;
  constexpr size_t L = hn::MaxLanes(D32());
  constexpr size_t C = kLanes / L;
  static_assert(kLanes % L == 0, "lane count must divide 48");
  const auto half = hn::Set(d, kHalf);
  // The 16 rows of output pixel x, as C vectors of L bytes (row r, channel c at byte 3r + c).
  auto pixel = [&](int x, hn::Vec<decltype(d8)>* out) HWY_ATTR {
    const std::uint8_t* p = il + static_cast<size_t>(start[x]) * kLanes;
    const std::int32_t* kx = k + static_cast<size_t>(x) * N;
    hn::Vec<D32> acc[C];
    for (size_t c = 0; c < C; ++c) acc[c] = half;
    for (int t = 0; t < N; ++t, p += kLanes) {
      const auto kt = hn::Set(d, kx[t]);
      for (size_t c = 0; c < C; ++c) {
        acc[c] = hn::Add(acc[c], hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p + c * L)), kt));
      }
    }
    for (size_t c = 0; c < C; ++c) out[c] = hn::DemoteTo(d8, hn::ShiftRight<kShift>(acc[c]));
  };
  int x = 0;
#if STOKER_RESAMPLE_AVX512
  if constexpr (L == 16) {
    for (; x + 16 <= out_w; x += 16) {
      __m512i m[16];
      for (int j = 0; j < 16; ++j) {
        hn::Vec<decltype(d8)> v[C];
        pixel(x + j, v);
        __m512i z = _mm512_castsi128_si512(v[0].raw);
        z = _mm512_inserti32x4(z, v[1].raw, 1);
        z = _mm512_inserti32x4(z, v[2].raw, 2);
        m[j] = ExpandRgb(z);  // element r = row r of pixel x + j
      }
      Transpose16x16(m);  // m[r] = pixels x..x+15 of row r
      for (int r = 0; r < kRows; ++r) {
        _mm512_mask_storeu_epi8(out_rows[r] + 3 * static_cast<size_t>(x), kMask48,
                                CompressRgb(m[r]));
      }
    }
  }
#endif
  HWY_ALIGN std::uint8_t px[kLanes + 8];
  for (; x < out_w; ++x) {
    hn::Vec<decltype(d8)> v[C];
    pixel(x, v);
    for (size_t c = 0; c < C; ++c) hn::StoreU(v[c], d8, px + c * L);
    // Each piece is read back from within ONE of the vector stores above: a load spanning two
    // stores (rows 5 and 10 straddle the 16-byte boundaries, row 15's 4th byte was never
    // stored) cannot be store-forwarded and stalls.
    const size_t off = static_cast<size_t>(x) * 3;
    for (int r = 0; r < kRows; ++r) {
      std::uint8_t* o = out_rows[r] + off;
      const std::uint8_t* q = px + r * 3;
      if (L == 16 && r == 5) {  // bytes 15 | 16 17
        o[0] = q[0];
        std::memcpy(o + 1, q + 1, 2);
      } else if ((L == 16 && (r == 10 || r == 15)) || x + 1 == out_w) {
        std::memcpy(o, q, 2);
        o[2] = q[2];
      } else {
        std::memcpy(o, q, 4);  // the 4th byte is overwritten by the next pixel
      }
    }
  }
}

template <int N>
HWY_INLINE void VerticalT(const std::uint8_t* const* rows, const std::int32_t* k, int n,
                          std::uint8_t* HWY_RESTRICT out) {
  // Full-width vectors here (16 lanes on AVX-512): rows are contiguous, no 24-lane constraint.
  using DV = hn::ScalableTag<std::int32_t>;
  const DV d;
  const hn::Rebind<std::uint8_t, DV> d8;
  const int L = static_cast<int>(hn::Lanes(d));
  constexpr int kUnroll = 4;
  const std::uint8_t* r[N];
  hn::Vec<DV> kk[N];
  for (int t = 0; t < N; ++t) r[t] = rows[t], kk[t] = hn::Set(d, k[t]);
  const auto half = hn::Set(d, kHalf);
  int i = 0;
  for (; i + kUnroll * L <= n; i += kUnroll * L) {
    hn::Vec<DV> acc[kUnroll];
    for (int u = 0; u < kUnroll; ++u) acc[u] = half;
    for (int t = 0; t < N; ++t) {
      for (int u = 0; u < kUnroll; ++u) {
        acc[u] = hn::Add(acc[u], hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, r[t] + i + u * L)), kk[t]));
      }
    }
    for (int u = 0; u < kUnroll; ++u) {
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<kShift>(acc[u])), d8, out + i + u * L);
    }
  }
  for (; i < n; ++i) {
    std::int32_t acc = kHalf;
    for (int t = 0; t < N; ++t) acc += static_cast<std::int32_t>(r[t][i]) * k[t];
    const std::int32_t v = acc >> kShift;
    out[i] = static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
  }
}

void HorizontalFixed(int taps, const std::uint8_t* il, const int* start, const std::int32_t* k,
                     int out_w, std::uint8_t* const* out_rows) {
  switch (taps) {
    case 4: return HorizontalT<4>(il, start, k, out_w, out_rows);
    case 5: return HorizontalT<5>(il, start, k, out_w, out_rows);
    case 6: return HorizontalT<6>(il, start, k, out_w, out_rows);
    case 7: return HorizontalT<7>(il, start, k, out_w, out_rows);
    case 8: return HorizontalT<8>(il, start, k, out_w, out_rows);
    case 9: return HorizontalT<9>(il, start, k, out_w, out_rows);
    case 10: return HorizontalT<10>(il, start, k, out_w, out_rows);
    case 11: return HorizontalT<11>(il, start, k, out_w, out_rows);
    case 12: return HorizontalT<12>(il, start, k, out_w, out_rows);
    case 13: return HorizontalT<13>(il, start, k, out_w, out_rows);
  }
}

void VerticalFixed(int taps, const std::uint8_t* const* rows, const std::int32_t* k, int n,
                   std::uint8_t* out) {
  switch (taps) {
    case 4: return VerticalT<4>(rows, k, n, out);
    case 5: return VerticalT<5>(rows, k, n, out);
    case 6: return VerticalT<6>(rows, k, n, out);
    case 7: return VerticalT<7>(rows, k, n, out);
    case 8: return VerticalT<8>(rows, k, n, out);
    case 9: return VerticalT<9>(rows, k, n, out);
    case 10: return VerticalT<10>(rows, k, n, out);
    case 11: return VerticalT<11>(rows, k, n, out);
    case 12: return VerticalT<12>(rows, k, n, out);
    case 13: return VerticalT<13>(rows, k, n, out);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace stoker::image::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker::image::detail {

HWY_EXPORT(HorizontalFixed);
HWY_EXPORT(InterleaveRows);

void interleave_block(const std::uint8_t* const* rows, int w, std::uint8_t* il) {
  HWY_DYNAMIC_DISPATCH(InterleaveRows)(rows, w, il);
}
HWY_EXPORT(VerticalFixed);

void horizontal_block_fixed(int taps, const std::uint8_t* il, const int* start,
                            const std::int32_t* k, int out_w, std::uint8_t* const* out_rows) {
  HWY_DYNAMIC_DISPATCH(HorizontalFixed)(taps, il, start, k, out_w, out_rows);
}

void vertical_row_fixed(int taps, const std::uint8_t* const* rows, const std::int32_t* k, int n,
                        std::uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(VerticalFixed)(taps, rows, k, n, out);
}

}  // namespace stoker::image::detail
#endif  // HWY_ONCE
