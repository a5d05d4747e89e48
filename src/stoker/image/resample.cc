// Exact Pillow 9.4 BICUBIC resampling of 8-bit RGB (libImaging/Resample.c semantics, re-derived;
// see README.md "Resampling" for the arithmetic that must match bit for bit).
//
// Speed structure (same arithmetic, different loop order — integer sums are order-independent):
//  * horizontal pass: 8 source rows are interleaved per pixel ([x][row][channel], 24 bytes), so
//    one output pixel of all 8 rows is a 24-lane multiply-accumulate of contiguous bytes;
//  * vertical pass: an output row is a weighted sum of whole source rows, 64 lanes at a time;
//  * the two passes are fused by row blocks: right after a block of 8 intermediate rows is
//    produced, every output row whose source rows are complete is computed, while those rows are
//    still in cache;
//  * the hot kernels are compiled twice (AVX2 and the x86-64 baseline) and picked at load time by
//    the dynamic loader (GCC target_clones), so shipped builds need no -march flag.
#include "stoker/image/resample.h"

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
constexpr int kBlockRows = 8;                             // rows per horizontal block
constexpr int kLanes = kBlockRows * 3;                    // interleaved bytes per pixel column

// Keys's cubic convolution kernel with a = −0.5 (Pillow's bicubic_filter), in double.
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Fixed-point filter taps for one axis: output i reads `count[i]` inputs from `start[i]`.
struct Coeffs {
  int ksize = 0;
  std::vector<int> start;
  std::vector<int> count;
  std::vector<std::int32_t> k;  // out_size × ksize, zero beyond count
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
  return c;
}

// Process-wide cache keyed by (in, out). Bounded: when full it is emptied (tables are cheap to
// rebuild, and real workloads reuse a few hundred sizes at most). Entries are shared_ptr so a
// caller keeps its table alive across a concurrent eviction.
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
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();
    map_.emplace(key, c);
    return c;
  }

 private:
  static constexpr size_t kMaxEntries = 1024;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const Coeffs>> map_;
};

CoeffCache& coeff_cache() {
  static CoeffCache* cache = new CoeffCache();  // never destroyed: usable during exit
  return *cache;
}

inline std::uint8_t clip8(std::int32_t acc) {
  const std::int32_t v = acc >> kPrecisionBits;  // arithmetic shift, as Pillow's clip8 index
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// [x][row][channel] ← 8 rows of RGB. The 4-byte copies overlap: each writes one byte of the next
// slot, which the next copy (or the next column) overwrites; the last column copies 3 bytes so no
// source row is over-read. `il` must have 1 spare byte past w·24.
void interleave_rows(const std::uint8_t* const* rows, int w, std::uint8_t* il) {
  int x = 0;
  for (; x < w - 1; ++x) {
    std::uint8_t* d = il + static_cast<size_t>(x) * kLanes;
    for (int r = 0; r < kBlockRows; ++r) std::memcpy(d + r * 3, rows[r] + x * 3, 4);
  }
  std::uint8_t* d = il + static_cast<size_t>(x) * kLanes;
  for (int r = 0; r < kBlockRows; ++r) std::memcpy(d + r * 3, rows[r] + x * 3, 3);
}

// One horizontal block: 8 interleaved source rows → 8 output rows of out_w RGB pixels.
STOKER_SIMD_CLONES
void horizontal_block(const std::uint8_t* __restrict il, const Coeffs& c, int out_w,
                      std::uint8_t* const* out_rows) {
  const int ksize = c.ksize;
  for (int x = 0; x < out_w; ++x) {
    const std::int32_t* k = c.k.data() + static_cast<size_t>(x) * ksize;
    const std::uint8_t* p = il + static_cast<size_t>(c.start[x]) * kLanes;
    const int n = c.count[x];
    std::int32_t acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = kHalf;
    for (int t = 0; t < n; ++t, p += kLanes) {
      const std::int32_t kt = k[t];
      for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<std::int32_t>(p[j]) * kt;
    }
    std::uint8_t px[kLanes];
    for (int j = 0; j < kLanes; ++j) px[j] = clip8(acc[j]);
    for (int r = 0; r < kBlockRows; ++r) std::memcpy(out_rows[r] + x * 3, px + r * 3, 3);
  }
}

// One vertical output row: Σ_t rows[t][i] · k[t] over n = 3·width bytes.
STOKER_SIMD_CLONES
void vertical_row(const std::uint8_t* const* rows, const std::int32_t* k, int taps, int n,
                  std::uint8_t* __restrict out) {
  constexpr int kChunk = 64;
  int i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    std::int32_t acc[kChunk];
    for (int j = 0; j < kChunk; ++j) acc[j] = kHalf;
    for (int t = 0; t < taps; ++t) {
      const std::uint8_t* s = rows[t] + i;
      const std::int32_t kt = k[t];
      for (int j = 0; j < kChunk; ++j) acc[j] += static_cast<std::int32_t>(s[j]) * kt;
    }
    for (int j = 0; j < kChunk; ++j) out[i + j] = clip8(acc[j]);
  }
  for (; i < n; ++i) {
    std::int32_t acc = kHalf;
    for (int t = 0; t < taps; ++t) acc += static_cast<std::int32_t>(rows[t][i]) * k[t];
    out[i] = clip8(acc);
  }
}

// Per-thread scratch: the intermediate image and the interleave buffer. Kept between calls so
// the steady state does not page-fault a fresh 6 MB buffer per image; dropped when oversized.
struct Scratch {
  std::vector<std::uint8_t> tmp;
  std::vector<std::uint8_t> il;
  std::vector<std::uint8_t> sink_row;
  void trim() {
    constexpr size_t kKeep = size_t{64} << 20;
    if (tmp.capacity() > kKeep) std::vector<std::uint8_t>().swap(tmp);
  }
};

// Horizontal pass over source rows [first, last) into `dst_rows` (one pointer per row, relative
// to `first`), calling `on_rows_done(rows_done)` after each block so the caller can run the
// vertical pass on completed rows.
template <typename OnDone>
void horizontal_pass(const RgbImage& src, const Coeffs& hc, int out_w, int first, int last,
                     std::uint8_t* dst, Scratch* s, OnDone on_done) {
  const size_t out_stride = static_cast<size_t>(out_w) * 3;
  s->il.resize(static_cast<size_t>(src.width) * kLanes + 1);
  s->sink_row.resize(out_stride);
  const std::uint8_t* in_rows[kBlockRows];
  std::uint8_t* out_rows[kBlockRows];
  for (int y0 = first; y0 < last; y0 += kBlockRows) {
    const int rows = std::min(kBlockRows, last - y0);
    for (int r = 0; r < kBlockRows; ++r) {
      // A short final block repeats its last row; those outputs go to a throwaway row.
      in_rows[r] = src.row(y0 + std::min(r, rows - 1));
      out_rows[r] = r < rows ? dst + static_cast<size_t>(y0 - first + r) * out_stride
                             : s->sink_row.data();
    }
    interleave_rows(in_rows, src.width, s->il.data());
    horizontal_block(s->il.data(), hc, out_w, out_rows);
    on_done(y0 + rows - first);
  }
}

}  // namespace

void resize_bicubic_exact(const RgbImage& src, int dst_w, int dst_h, RgbImage* dst) {
  STOKER_CHECK(src.width > 0 && src.height > 0 && dst_w > 0 && dst_h > 0,
               "resize_bicubic_exact: empty size");
  STOKER_CHECK(src.pixels.size() == static_cast<size_t>(src.width) * src.height * 3,
               "resize_bicubic_exact: source buffer does not match its size");
  STOKER_CHECK(dst != &src, "resize_bicubic_exact: in-place resize");
  dst->width = dst_w;
  dst->height = dst_h;
  dst->pixels.resize(static_cast<size_t>(dst_w) * dst_h * 3);
  if (dst_w == src.width && dst_h == src.height) {  // Pillow returns a copy
    std::memcpy(dst->pixels.data(), src.pixels.data(), src.pixels.size());
    return;
  }
  const bool need_h = dst_w != src.width;
  const bool need_v = dst_h != src.height;
  thread_local Scratch scratch;
  const size_t out_stride = static_cast<size_t>(dst_w) * 3;

  if (!need_v) {  // horizontal only: every source row, straight into dst
    auto hc = coeff_cache().get(src.width, dst_w);
    horizontal_pass(src, *hc, dst_w, 0, src.height, dst->pixels.data(), &scratch, [](int) {});
    return;
  }
  auto vc = coeff_cache().get(src.height, dst_h);
  const int taps_max = vc->ksize;
  std::vector<const std::uint8_t*> rows(taps_max);
  if (!need_h) {  // vertical only, from the source rows
    for (int y = 0; y < dst_h; ++y) {
      const int n = vc->count[y];
      for (int t = 0; t < n; ++t) rows[t] = src.row(vc->start[y] + t);
      vertical_row(rows.data(), vc->k.data() + static_cast<size_t>(y) * vc->ksize, n,
                   static_cast<int>(out_stride), dst->pixels.data() + y * out_stride);
    }
    return;
  }
  auto hc = coeff_cache().get(src.width, dst_w);
  // Only the source rows the vertical pass reads are resampled horizontally.
  const int first = vc->start[0];
  const int last = vc->start[dst_h - 1] + vc->count[dst_h - 1];
  scratch.tmp.resize(static_cast<size_t>(last - first) * out_stride);
  std::uint8_t* tmp = scratch.tmp.data();
  int next_y = 0;
  // start + count is non-decreasing in y, so output rows complete in order.
  horizontal_pass(src, *hc, dst_w, first, last, tmp, &scratch, [&](int rows_done) {
    while (next_y < dst_h && vc->start[next_y] + vc->count[next_y] - first <= rows_done) {
      const int n = vc->count[next_y];
      for (int t = 0; t < n; ++t) rows[t] = tmp + (vc->start[next_y] - first + t) * out_stride;
      vertical_row(rows.data(), vc->k.data() + static_cast<size_t>(next_y) * vc->ksize, n,
                   static_cast<int>(out_stride), dst->pixels.data() + next_y * out_stride);
      ++next_y;
    }
  });
  STOKER_CHECK(next_y == dst_h, "resize_bicubic_exact: vertical pass incomplete");
  scratch.trim();
}

}  // namespace stoker::image
