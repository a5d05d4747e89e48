// Exact Pillow 9.4 BICUBIC resampling of 8-bit RGB (libImaging/Resample.c semantics, re-derived;
// see README.md "Resampling" for the arithmetic that must match bit for bit).
//
// Speed structure (same arithmetic, different loop order — integer sums are order-independent):
//  * horizontal pass: 16 source rows are interleaved per pixel ([x][row][channel], 48 bytes), so
//    one output pixel of all 16 rows is a 48-lane multiply-accumulate of contiguous bytes;
//  * vertical pass: an output row is a weighted sum of whole source rows, 64 lanes at a time;
//  * the two passes are fused by row blocks: right after a block of 8 intermediate rows is
//    produced, every output row whose source rows are complete is computed, while those rows are
//    still in cache;
//  * windows are padded to the kernel size (zero weights), so the common sizes run fixed-tap
//    Highway kernels (detail/resample_kernels.cc, runtime dispatch: SSE4 / AVX2 / AVX-512 ...);
//    other sizes use the portable loops below (the GCC AVX2 clone where available).
#include "stoker/image/resample.h"

#include "stoker/image/detail/resample_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(STOKER_NO_TARGET_CLONES)
#define STOKER_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define STOKER_SIMD_CLONES
#endif

namespace stoker::image {
namespace {

constexpr int kPrecisionBits = 22;                        // 32 − 8 − 2, as Pillow
constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);  // rounding bias of every sum
constexpr int kBlockRows = detail::kResampleBlockRows;     // rows per horizontal block
constexpr int kLanes = kBlockRows * 3;                    // interleaved bytes per pixel column

// Keys's cubic convolution kernel with a = −0.5 (Pillow's bicubic_filter), in double.
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Fixed-point filter taps for one axis: output i reads `count[i]` inputs from `start[i]` with
// weights k[i·ksize ...]. The padded form (when in_size ≥ ptaps) gives every output exactly ptaps
// taps — the window slid left at the right edge, zero weights outside Pillow's window — so the
// kernels run a compile-time tap count with no per-pixel branches. Zero weights add exactly 0.
struct Coeffs {
  int ksize = 0;
  std::vector<int> start;
  std::vector<int> count;
  std::vector<std::int32_t> k;  // out_size × ksize, zero beyond count
  bool padded = false;
  // Taps of the padded form: the widest window any output has, not Pillow's ksize bound
  // (2·ceil(support)+1). Upscales need 4, not 5 — a fifth of the multiply-adds.
  int ptaps = 0;
  std::vector<int> pstart;
  std::vector<std::int32_t> pk;  // out_size × ptaps
};

std::shared_ptr<const Coeffs> compute_coeffs(int in_size, int out_size) {
  auto c = std::make_shared<Coeffs>();
  // Pillow passes the box as floats; (float)in − 0.0f is exact for any size < 2^24.
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  c->ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c->start.resize(out_size);
  c->count.resize(out_size);
  c->k.assign(static_cast<size_t>(out_size) * c->ksize, 0);
  std::vector<double> w(c->ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;  // multiplied, not divided: last-bit parity
    int xmin = static_cast<int>(center - support + 0.5);  // truncation toward zero, as C
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    const int n = xmax - xmin;
    double ww = 0.0;
    for (int x = 0; x < n; ++x) {
      w[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    std::int32_t* k = &c->k[static_cast<size_t>(xx) * c->ksize];
    for (int x = 0; x < n; ++x) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      // Sign-aware rounding, then C truncation: (int)(±0.5 + v·2^22).
      k[x] = v < 0 ? static_cast<std::int32_t>(-0.5 + v * (1 << kPrecisionBits))
                   : static_cast<std::int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    c->start[xx] = xmin;
    c->count[xx] = n;
  }
  const int widest = *std::max_element(c->count.begin(), c->count.end());
  c->ptaps = detail::fixed_kernel_taps(widest);
  if (c->ptaps == 0) c->ptaps = c->ksize;  // no fixed kernel that wide: portable loops
  if (in_size >= c->ptaps) {
    // Slide each window left at the right edge so it stays inside the source; start + count ≤
    // in_size keeps the real taps inside the ptaps slots.
    const int n = c->ptaps;
    c->padded = true;
    c->pstart.resize(out_size);
    c->pk.assign(static_cast<size_t>(out_size) * n, 0);
    for (int xx = 0; xx < out_size; ++xx) {
      const int s = std::min(c->start[xx], in_size - n);
      const int shift = c->start[xx] - s;
      c->pstart[xx] = s;
      for (int t = 0; t < c->count[xx]; ++t) {
        c->pk[static_cast<size_t>(xx) * n + shift + t] =
            c->k[static_cast<size_t>(xx) * c->ksize + t];
      }
    }
  }
  return c;
}

// Process-wide cache keyed by (in, out). Bounded by entry count and bytes: when an insert would
// exceed either, the cache is emptied (tables cost ~50 µs to rebuild, and datasets either reuse
// a few sizes — all hits — or are so varied that no eviction policy would help). Entries are
// shared_ptr so a caller keeps its table alive across a concurrent eviction.
class CoeffCache {
 public:
  std::shared_ptr<const Coeffs> get(int in_size, int out_size) {
    const std::uint64_t key = (std::uint64_t(std::uint32_t(in_size)) << 32) | std::uint32_t(out_size);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    auto c = compute_coeffs(in_size, out_size);  // outside the lock
    const size_t bytes = c->k.size() * sizeof(std::int32_t) * 2 + c->start.size() * sizeof(int) * 3;
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kMaxEntries || bytes_ + bytes > kMaxBytes) {
      map_.clear();
      bytes_ = 0;
    }
    if (map_.emplace(key, c).second) bytes_ += bytes;
    return c;
  }

 private:
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxBytes = size_t{32} << 20;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const Coeffs>> map_;
  size_t bytes_ = 0;
};

CoeffCache& coeff_cache() {
  static CoeffCache* cache = new CoeffCache();  // never destroyed: usable during exit
  return *cache;
}

inline std::uint8_t clip8(std::int32_t acc) {
  const std::int32_t v = acc >> kPrecisionBits;  // arithmetic shift, as Pillow's clip8 index
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// The inverse: interleaved block → kBlockRows rows (rows are written in x order, so the 4th byte of each
// copy is overwritten by the next pixel; the last pixel copies 3 bytes).
void deinterleave_rows(const std::uint8_t* il, int w, std::uint8_t* const* rows) {
  for (int r = 0; r < kBlockRows; ++r) {
    std::uint8_t* d = rows[r];
    const std::uint8_t* s = il + r * 3;
    int x = 0;
    for (; x < w - 1; ++x) std::memcpy(d + x * 3, s + static_cast<size_t>(x) * kLanes, 4);
    std::memcpy(d + x * 3, s + static_cast<size_t>(x) * kLanes, 3);
  }
}

// Any tap count (tiny sources, large downscales): Pillow's own window per pixel.
STOKER_SIMD_CLONES
void horizontal_any(const std::uint8_t* __restrict il, const Coeffs& c, int out_w,
                    std::uint8_t* __restrict il_out) {
  for (int x = 0; x < out_w; ++x) {
    const std::int32_t* k = c.k.data() + static_cast<size_t>(x) * c.ksize;
    const std::uint8_t* p = il + static_cast<size_t>(c.start[x]) * kLanes;
    const int n = c.count[x];
    std::int32_t acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = kHalf;
    for (int t = 0; t < n; ++t, p += kLanes) {
      const std::int32_t kt = k[t];
      for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<std::int32_t>(p[j]) * kt;
    }
    for (int j = 0; j < kLanes; ++j) il_out[static_cast<size_t>(x) * kLanes + j] = clip8(acc[j]);
  }
}

// Any tap count: accumulate 4 rows at a time into an int32 row buffer (stays in L1/L2).
STOKER_SIMD_CLONES
void vertical_any(const std::uint8_t* const* rows, const std::int32_t* k, int taps, int n,
                  std::int32_t* __restrict acc, std::uint8_t* __restrict out) {
  for (int i = 0; i < n; ++i) acc[i] = kHalf;
  int t = 0;
  for (; t + 4 <= taps; t += 4) {
    const std::uint8_t* __restrict r0 = rows[t];
    const std::uint8_t* __restrict r1 = rows[t + 1];
    const std::uint8_t* __restrict r2 = rows[t + 2];
    const std::uint8_t* __restrict r3 = rows[t + 3];
    const std::int32_t k0 = k[t], k1 = k[t + 1], k2 = k[t + 2], k3 = k[t + 3];
    for (int i = 0; i < n; ++i) {
      acc[i] += static_cast<std::int32_t>(r0[i]) * k0 + static_cast<std::int32_t>(r1[i]) * k1 +
                static_cast<std::int32_t>(r2[i]) * k2 + static_cast<std::int32_t>(r3[i]) * k3;
    }
  }
  for (; t < taps; ++t) {
    const std::uint8_t* __restrict r0 = rows[t];
    const std::int32_t k0 = k[t];
    for (int i = 0; i < n; ++i) acc[i] += static_cast<std::int32_t>(r0[i]) * k0;
  }
  for (int i = 0; i < n; ++i) out[i] = clip8(acc[i]);
}

// Per-thread scratch, kept between calls so the steady state does not page-fault fresh
// buffers per image. Everything here is a few hundred KB for a 4K image: the pipeline streams.
struct Scratch {
  std::vector<std::uint8_t> ring;    // horizontally resampled rows the vertical pass still needs
  std::vector<std::uint8_t> il;      // interleaved source block
  std::vector<std::uint8_t> il_out;  // interleaved output block
  std::vector<std::uint8_t> sink_row;
  std::vector<std::int32_t> acc;     // vertical_any
};

// One axis's taps in the form the kernels want: fixed-count (padded) when available.
struct AxisPlan {
  const Coeffs* c;
  bool fixed;
  int start(int i) const { return fixed ? c->pstart[i] : c->start[i]; }
  int taps(int i) const { return fixed ? c->ptaps : c->count[i]; }
  const std::int32_t* k(int i) const {
    return fixed ? c->pk.data() + static_cast<size_t>(i) * c->ptaps
                 : c->k.data() + static_cast<size_t>(i) * c->ksize;
  }
};

// Horizontal pass over one block of up to kBlockRows source rows into `out_rows`.
void horizontal_block(const std::uint8_t* const* src_rows, int rows, int src_w, const Coeffs& hc,
                      int out_w, std::uint8_t* const* dst_rows, Scratch* s) {
  const std::uint8_t* in_rows[kBlockRows];
  std::uint8_t* out_rows[kBlockRows];
  for (int r = 0; r < kBlockRows; ++r) {
    // A short final block repeats its last row; those outputs go to a throwaway row.
    in_rows[r] = src_rows[std::min(r, rows - 1)];
    out_rows[r] = r < rows ? dst_rows[r] : s->sink_row.data();
  }
  detail::interleave_block(in_rows, src_w, s->il.data());
  if (hc.padded && detail::has_fixed_kernel(hc.ptaps)) {
    detail::horizontal_block_fixed(hc.ptaps, s->il.data(), hc.pstart.data(), hc.pk.data(), out_w,
                                   out_rows);
  } else {
    horizontal_any(s->il.data(), hc, out_w, s->il_out.data());
    deinterleave_rows(s->il_out.data(), out_w, out_rows);
  }
}

// Output row y of the vertical pass; `row(j)` is horizontally resampled source row j.
template <typename RowAt>
void vertical_output_row(const AxisPlan& v, int y, int n, const RowAt& row, std::uint8_t* out,
                         Scratch* s) {
  const std::uint8_t* rows[64];
  const int taps = v.taps(y);
  if (taps <= 64) {
    for (int t = 0; t < taps; ++t) rows[t] = row(v.start(y) + t);
    if (v.fixed) return detail::vertical_row_fixed(taps, rows, v.k(y), n, out);
    s->acc.resize(static_cast<size_t>(n));
    return vertical_any(rows, v.k(y), taps, n, s->acc.data(), out);
  }
  std::vector<const std::uint8_t*> many(taps);  // huge downscales only
  for (int t = 0; t < taps; ++t) many[t] = row(v.start(y) + t);
  s->acc.resize(static_cast<size_t>(n));
  vertical_any(many.data(), v.k(y), taps, n, s->acc.data(), out);
}

}  // namespace

Status resize_bicubic_exact_stream(int src_w, int src_h, const RowSource& source, int dst_w,
                                   int dst_h, const RowSink& sink, const RowsReady& rows_ready) {
  STOKER_CHECK(src_w > 0 && src_h > 0 && dst_w > 0 && dst_h > 0,
               "resize_bicubic_exact: empty size");
  const size_t in_stride = static_cast<size_t>(src_w) * 3;
  const size_t out_stride = static_cast<size_t>(dst_w) * 3;
  const int n_out = static_cast<int>(out_stride);
  auto ready = [&rows_ready](int rows) {
    if (rows_ready) rows_ready(rows);
  };
  const std::uint8_t* block[kBlockRows];
  if (dst_w == src_w && dst_h == src_h) {  // Pillow returns a copy
    for (int y = 0; y < dst_h; ++y) {
      STOKER_RETURN_IF_ERROR(source(1, block));
      std::memcpy(sink(y), block[0], out_stride);
      ready(y + 1);
    }
    return ok_status();
  }
  thread_local Scratch scratch;
  Scratch* s = &scratch;
  const bool need_h = dst_w != src_w;
  const bool need_v = dst_h != src_h;
  std::shared_ptr<const Coeffs> hc, vc;
  if (need_h) {
    hc = coeff_cache().get(src_w, dst_w);
    s->il.resize(in_stride * kBlockRows + 1);
    s->il_out.resize(out_stride * kBlockRows + 1);
    s->sink_row.resize(out_stride + 1);
  }
  // Source rows [first, last) are the ones the vertical pass reads (all of them without one).
  AxisPlan v{nullptr, false};
  int first = 0, last = src_h, widest = 1;
  if (need_v) {
    vc = coeff_cache().get(src_h, dst_h);
    v = {vc.get(), vc->padded && detail::has_fixed_kernel(vc->ptaps)};
    first = v.start(0);
    last = v.start(dst_h - 1) + v.taps(dst_h - 1);
    for (int y = 0; y < dst_h; ++y) widest = std::max(widest, v.taps(y));
  }
  // Horizontally resampled rows live in a ring: when a block of kBlockRows rows arrives, the rows
  // still needed start at most `widest` rows before it (windows only move down), so 2 blocks +
  // the widest window never overwrite a row that an unfinished output row reads.
  const int ring_rows = std::min(last - first, 2 * kBlockRows + widest);
  s->ring.resize(static_cast<size_t>(ring_rows) * out_stride);
  auto ring_row = [&](int j) {  // j: source row index
    return s->ring.data() + static_cast<size_t>((j - first) % ring_rows) * out_stride;
  };
  for (int y = 0; y < first; y += kBlockRows) {  // rows above every window: read and dropped
    STOKER_RETURN_IF_ERROR(source(std::min(kBlockRows, first - y), block));
  }
  int next_y = 0;
  for (int y0 = first; y0 < last; y0 += kBlockRows) {
    const int rows = std::min(kBlockRows, last - y0);
    STOKER_RETURN_IF_ERROR(source(rows, block));
    std::uint8_t* dst_rows[kBlockRows];
    for (int r = 0; r < rows; ++r) dst_rows[r] = ring_row(y0 + r);
    if (need_h) {
      horizontal_block(block, rows, src_w, *hc, dst_w, dst_rows, s);
    } else {
      for (int r = 0; r < rows; ++r) std::memcpy(dst_rows[r], block[r], out_stride);
    }
    const int done = y0 + rows;  // source rows [first, done) are in the ring
    if (!need_v) {
      for (; next_y < done; ++next_y) {
        std::memcpy(sink(next_y), ring_row(next_y), out_stride);
        ready(next_y + 1);
      }
      continue;
    }
    // start + taps is non-decreasing in y, so output rows complete in order.
    while (next_y < dst_h && v.start(next_y) + v.taps(next_y) <= done) {
      vertical_output_row(v, next_y, n_out, ring_row, sink(next_y), s);
      ready(++next_y);
    }
  }
  STOKER_CHECK(next_y == dst_h, "resize_bicubic_exact: output incomplete");
  return ok_status();
}

void resize_bicubic_exact(const RgbImage& src, int dst_w, int dst_h, RgbImage* dst) {
  resize_bicubic_exact(src, dst_w, dst_h, dst, RowsReady());
}

void resize_bicubic_exact(const RgbImage& src, int dst_w, int dst_h, RgbImage* dst,
                          const RowsReady& rows_ready) {
  STOKER_CHECK(src.width > 0 && src.height > 0 && dst_w > 0 && dst_h > 0,
               "resize_bicubic_exact: empty size");
  STOKER_CHECK(src.pixels.size() == static_cast<size_t>(src.width) * src.height * 3,
               "resize_bicubic_exact: source buffer does not match its size");
  STOKER_CHECK(dst != &src, "resize_bicubic_exact: in-place resize");
  dst->width = dst_w;
  dst->height = dst_h;
  dst->pixels.resize(static_cast<size_t>(dst_w) * dst_h * 3);
  int next = 0;
  Status st = resize_bicubic_exact_stream(
      src.width, src.height,
      [&](int n, const std::uint8_t** rows) {
        for (int r = 0; r < n; ++r) rows[r] = src.row(next + r);
        next += n;
        return ok_status();
      },
      dst_w, dst_h, [&](int y) { return dst->row(y); }, rows_ready);
  STOKER_CHECK(st.ok(), "resize_bicubic_exact: an in-memory source cannot fail");
}

}  // namespace stoker::image
