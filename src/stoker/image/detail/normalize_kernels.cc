// Highway kernel for normalise (processor.cc); this file is compiled once per SIMD target through
// hwy/foreach_target.h. Exactness rests on IEEE lane ops: u8 → f64 is exact, Mul rounds once in
// float64, DemoteTo rounds to nearest even into float32 (the scalar cast), Sub and Div round once
// in float32. The file is built with -ffp-contract=off so no FMA creeps in.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stoker/image/detail/normalize_kernels.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "stoker/image/detail/normalize_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace stoker::image::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kChunk = 256;  // pixels deinterleaved at a time (a multiple of any u8 lane count)
static_assert(kChunk <= kNormalizePad, "the pad must cover a chunk's rounding");

using DD = hn::ScalableTag<double>;
using DFH = hn::Rebind<float, DD>;  // float lanes as many as double lanes
#if HWY_TARGET == HWY_SCALAR
using DF = DFH;
#else
using DF = hn::Twice<DFH>;
#endif

// float32(float64(u[i..]) · rf) for Lanes(DF) pixels.
HWY_INLINE hn::Vec<DF> Rescale(const std::uint8_t* HWY_RESTRICT u, hn::Vec<DD> rf) {
  const DD dd;
  const DFH dfh;
  const hn::Rebind<std::int32_t, DD> di;
  const hn::Rebind<std::uint8_t, DD> d8;
  const auto lo = hn::DemoteTo(dfh, hn::Mul(hn::PromoteTo(dd, hn::PromoteTo(di, hn::LoadU(d8, u))), rf));
#if HWY_TARGET == HWY_SCALAR
  return lo;
#else
  const size_t h = hn::Lanes(dd);
  const auto hi =
      hn::DemoteTo(dfh, hn::Mul(hn::PromoteTo(dd, hn::PromoteTo(di, hn::LoadU(d8, u + h))), rf));
  return hn::Combine(DF(), hi, lo);
#endif
}

HWY_INLINE hn::Vec<DF> Value(const std::uint8_t* HWY_RESTRICT u, const NormalizeParams& p,
                             hn::Vec<DD> rf, hn::Vec<DF> mean, hn::Vec<DF> std) {
  const DF df;
  hn::Vec<DF> v;
  if (p.do_rescale) {
    v = Rescale(u, rf);
  } else {
    const hn::Rebind<std::int32_t, DF> di;
    const hn::Rebind<std::uint8_t, DF> d8;
    v = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, u)));
  }
  if (p.do_normalize) v = hn::Div(hn::Sub(v, mean), std);
  return v;
}

// float32 → bfloat16, round to nearest even (the scalar to_bf16 of processor.cc).
HWY_INLINE void StoreBf16(hn::Vec<DF> v, std::uint16_t* HWY_RESTRICT out) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<std::uint16_t, DF> d16;
  auto u = hn::BitCast(du, v);
  u = hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u))));
  hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(u))), d16, out);
}

#if HWY_NATIVE_FMA
constexpr bool kHasFma = true;
// The exact value from all-float32 lanes (NormalizeParams::fast): x·rf as a float-float product
// (hi + lo = rf to ~2^-48) rounded once, then the quotient (v − mean) / std by a reciprocal
// multiply and two FMA residual corrections.
template <int kCorrections>
HWY_INLINE hn::Vec<DF> FastValue(const std::uint8_t* HWY_RESTRICT u, hn::Vec<DF> rf_hi,
                                 hn::Vec<DF> rf_lo, hn::Vec<DF> mean, hn::Vec<DF> std,
                                 hn::Vec<DF> inv) {
  const DF df;
  const hn::Rebind<std::int32_t, DF> di;
  const hn::Rebind<std::uint8_t, DF> d8;
  const auto x = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, u)));
  const auto v = hn::MulAdd(x, rf_hi, hn::Mul(x, rf_lo));
  const auto d = hn::Sub(v, mean);
  auto q = hn::Mul(d, inv);
  for (int i = 0; i < kCorrections; ++i) q = hn::MulAdd(hn::NegMulAdd(q, std, d), inv, q);
  return q;
}
#else
constexpr bool kHasFma = false;
#endif

template <typename T>
HWY_INLINE void NormalizeRgb(const std::uint8_t* HWY_RESTRICT rgb, int n, const NormalizeParams& p,
                             T* const out[3]) {
  const hn::ScalableTag<std::uint8_t> d8;
  const DF df;
  const size_t L8 = hn::Lanes(d8), LF = hn::Lanes(df);
  HWY_ALIGN std::uint8_t planes[3][kChunk + 64];
  const auto rf = hn::Set(DD(), p.rescale_factor);
  for (int base = 0; base < n; base += kChunk) {
    const size_t m = static_cast<size_t>(std::min(kChunk, n - base));
    const std::uint8_t* src = rgb + static_cast<size_t>(base) * 3;
    for (size_t i = 0; i < m; i += L8) {
      hn::Vec<decltype(d8)> r, g, b;
      hn::LoadInterleaved3(d8, src + 3 * i, r, g, b);
      hn::Store(r, d8, planes[0] + i);
      hn::Store(g, d8, planes[1] + i);
      hn::Store(b, d8, planes[2] + i);
    }
    for (int c = 0; c < 3; ++c) {
      const auto mean = hn::Set(df, p.mean[c]);
      const auto std = hn::Set(df, p.std[c]);
      T* HWY_RESTRICT o = out[c] + base;
#if HWY_NATIVE_FMA
      if (p.fast != 0) {
        const float hi = static_cast<float>(p.rescale_factor);
        const auto rf_hi = hn::Set(df, hi);
        const auto rf_lo = hn::Set(df, static_cast<float>(p.rescale_factor - hi));
        const auto inv = hn::Set(df, 1.0f / p.std[c]);
        for (size_t i = 0; i < m; i += LF) {
          const auto v = p.fast == 1 ? FastValue<1>(planes[c] + i, rf_hi, rf_lo, mean, std, inv)
                                     : FastValue<2>(planes[c] + i, rf_hi, rf_lo, mean, std, inv);
          if constexpr (sizeof(T) == sizeof(float)) {
            hn::StoreU(v, df, o + i);
          } else {
            StoreBf16(v, o + i);
          }
        }
        continue;
      }
#endif
      for (size_t i = 0; i < m; i += LF) {
        const auto v = Value(planes[c] + i, p, rf, mean, std);
        if constexpr (sizeof(T) == sizeof(float)) {
          hn::StoreU(v, df, o + i);
        } else {
          StoreBf16(v, o + i);
        }
      }
    }
  }
}

void NormalizeF32(const std::uint8_t* rgb, int n, const NormalizeParams& p, float* const out[3]) {
  NormalizeRgb(rgb, n, p, out);
}

bool TargetHasFma() { return kHasFma; }

void NormalizeBf16(const std::uint8_t* rgb, int n, const NormalizeParams& p,
                   std::uint16_t* const out[3]) {
  NormalizeRgb(rgb, n, p, out);
}

// Non-temporal copy; dst and bytes are multiples of 16. Full vectors once dst is aligned to one.
void StreamCopy(void* dst_v, const void* src_v, size_t bytes) {
  auto* HWY_RESTRICT dst = static_cast<std::uint8_t*>(dst_v);
  const auto* HWY_RESTRICT src = static_cast<const std::uint8_t*>(src_v);
  const hn::ScalableTag<std::uint8_t> d;
  const hn::CappedTag<std::uint8_t, 16> d16;
  const size_t L = hn::Lanes(d), L16 = hn::Lanes(d16);
  while (bytes >= L16 && (reinterpret_cast<std::uintptr_t>(dst) & (L - 1)) != 0) {
    hn::Stream(hn::LoadU(d16, src), d16, dst);
    dst += L16, src += L16, bytes -= L16;
  }
  for (; bytes >= L; dst += L, src += L, bytes -= L) hn::Stream(hn::LoadU(d, src), d, dst);
  for (; bytes >= L16; dst += L16, src += L16, bytes -= L16) {
    hn::Stream(hn::LoadU(d16, src), d16, dst);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace stoker::image::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stoker::image::detail {

HWY_EXPORT(NormalizeF32);
HWY_EXPORT(NormalizeBf16);
HWY_EXPORT(StreamCopy);
HWY_EXPORT(TargetHasFma);

// The slow processor's formula, scalar (this file is built with -ffp-contract=off).
float exact_value(int x, int c, const NormalizeParams& p) {
  const float v = static_cast<float>(static_cast<double>(x) * p.rescale_factor);
  return (v - p.mean[c]) / p.std[c];
}

int verify_fast_normalize(const NormalizeParams& p) {
  if (!p.do_rescale || !p.do_normalize || !HWY_DYNAMIC_DISPATCH(TargetHasFma)()) return 0;
  std::vector<std::uint8_t> rgb(3 * (256 + kNormalizePad));
  for (int x = 0; x < 256; ++x) rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = static_cast<std::uint8_t>(x);
  std::vector<float> planes(3 * (256 + kNormalizePad));
  float* const out[3] = {planes.data(), planes.data() + 256 + kNormalizePad,
                         planes.data() + 2 * (256 + kNormalizePad)};
  for (int level : {1, 2}) {
    NormalizeParams fast = p;
    fast.fast = level;
    normalize_rgb_f32(rgb.data(), 256, fast, out);
    bool same = true;
    for (int c = 0; c < 3 && same; ++c) {
      for (int x = 0; x < 256 && same; ++x) {
        const float want = exact_value(x, c, p);
        same = std::memcmp(&want, &out[c][x], sizeof(float)) == 0;
      }
    }
    if (same) return level;
  }
  return 0;
}

void stream_copy(void* dst, const void* src, size_t bytes) {
  HWY_DYNAMIC_DISPATCH(StreamCopy)(dst, src, bytes);
}

void normalize_rgb_f32(const std::uint8_t* rgb, int n, const NormalizeParams& p,
                       float* const out[3]) {
  HWY_DYNAMIC_DISPATCH(NormalizeF32)(rgb, n, p, out);
}

void normalize_rgb_bf16(const std::uint8_t* rgb, int n, const NormalizeParams& p,
                        std::uint16_t* const out[3]) {
  HWY_DYNAMIC_DISPATCH(NormalizeBf16)(rgb, n, p, out);
}

}  // namespace stoker::image::detail
#endif  // HWY_ONCE
