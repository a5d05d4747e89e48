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

template <int N>
HWY_INLINE void HorizontalT(const std::uint8_t* HWY_RESTRICT il, const int* start,
                            const std::int32_t* k, int out_w, std::uint8_t* const* out_rows) {
  const D32 d;
  const hn::Rebind<std::uint8_t, D32> d8;
  constexpr size_t L = hn::MaxLanes(D32());
  constexpr size_t C = kLanes / L;
  static_assert(kLanes % L == 0, "lane count must divide 48");
  const auto half = hn::Set(d, kHalf);
  HWY_ALIGN std::uint8_t px[kLanes + 8];
  for (int x = 0; x < out_w; ++x) {
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
    for (size_t c = 0; c < C; ++c) {
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<kShift>(acc[c])), d8, px + c * L);
    }
    // Straight into the 16 destination rows. Rows are written in x order, so the 4th byte of
    // each copy is overwritten by the next pixel; the last pixel copies exactly 3 bytes.
    // Each piece is read back from within ONE of the vector stores above: a load spanning two
    // stores (rows 5 and 10 straddle the 16-byte boundaries, row 15's 4th byte was never
    // stored) cannot be store-forwarded and stalls — measured at ~40 % of this pass when those
    // rows were copied as one 4-byte piece.
    static_assert(L == 16 || kLanes % L == 0, "");
    const size_t off = static_cast<size_t>(x) * 3;
    if constexpr (L == 16) {
      for (int r = 0; r < kRows; ++r) {
        std::uint8_t* o = out_rows[r] + off;
        const std::uint8_t* q = px + r * 3;
        if (r == 5) {         // bytes 15 | 16 17
          o[0] = q[0];
          std::memcpy(o + 1, q + 1, 2);
        } else if (r == 10) {  // bytes 30 31 | 32
          std::memcpy(o, q, 2);
          o[2] = q[2];
        } else if (r == 15 || x + 1 == out_w) {
          std::memcpy(o, q, 2);
          o[2] = q[2];
        } else {
          std::memcpy(o, q, 4);  // the 4th byte is overwritten by the next pixel
        }
      }
    } else if (x + 1 < out_w) {
      for (int r = 0; r < kRows; ++r) std::memcpy(out_rows[r] + off, px + r * 3, 4);
    } else {
      for (int r = 0; r < kRows; ++r) std::memcpy(out_rows[r] + off, px + r * 3, 3);
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
