#include "stoker/audio/fft.h"

#include <cmath>
#include <numbers>

namespace stoker::audio {
namespace {

using C = std::complex<double>;

// e^(−2πi·num/den), accurate to the last bits for the exact multiples of π/4 too.
C unit(long long num, long long den) {
  const double a = -2.0 * std::numbers::pi * static_cast<double>(num) / static_cast<double>(den);
  return {std::cos(a), std::sin(a)};
}

inline C mul_neg_i(C z) { return {z.imag(), -z.real()}; }  // z · (−i)

}  // namespace

Result<RealFft> RealFft::create(int n) {
  if (n < 2 || n % 2 != 0) return invalid_argument("fft: length must be even and >= 2");
  RealFft f;
  f.n_ = n;
  f.m_ = n / 2;
  // Radix plan for the complex length m: 4s first, then a 2, then 3s and 5s.
  std::vector<int> radices;
  int rest = f.m_;
  while (rest % 4 == 0) {
    radices.push_back(4);
    rest /= 4;
  }
  if (rest % 2 == 0) {
    radices.push_back(2);
    rest /= 2;
  }
  for (int r : {3, 5}) {
    while (rest % r == 0) {
      radices.push_back(r);
      rest /= r;
    }
  }
  if (rest != 1) return invalid_argument("fft: length/2 has a prime factor above 5");
  int len = f.m_, stride = 1;
  for (int r : radices) {
    Stage s{.radix = r, .n = len, .stride = stride, .twiddle = f.twiddles_.size()};
    const int m = len / r;
    for (int p = 0; p < m; ++p) {
      for (int k = 1; k < r; ++k) f.twiddles_.push_back(unit(static_cast<long long>(p) * k, len));
    }
    f.stages_.push_back(s);
    len = m;
    stride *= r;
  }
  f.split_.resize(static_cast<std::size_t>(f.m_) + 1);
  for (int k = 0; k <= f.m_; ++k) f.split_[static_cast<std::size_t>(k)] = unit(k, n);
  return f;
}

// Stockham autosort, decimation in frequency: stage (n, s) reads x[q + s(p + j·m)] and writes
// y[q + s(r·p + k)] = DFT_r(a)[k] · W_n^(p·k), m = n / r; the output is in natural order.
void RealFft::complex_forward(C* x, C* y) const {
  static const double c1 = std::cos(2 * std::numbers::pi / 5), c2 = std::cos(4 * std::numbers::pi / 5);
  static const double s1 = std::sin(2 * std::numbers::pi / 5), s2 = std::sin(4 * std::numbers::pi / 5);
  static const double s3 = std::sin(2 * std::numbers::pi / 3);
  for (const Stage& st : stages_) {
    const int r = st.radix, s = st.stride, m = st.n / r;
    const C* tw = twiddles_.data() + st.twiddle;
    for (int p = 0; p < m; ++p) {
      const C* w = tw + static_cast<std::ptrdiff_t>(p) * (r - 1);
      for (int q = 0; q < s; ++q) {
        const C* a = x + q + s * p;
        C* out = y + q + s * r * p;
        const std::ptrdiff_t in_step = static_cast<std::ptrdiff_t>(s) * m;
        switch (r) {
          case 2: {
            const C a0 = a[0], a1 = a[in_step];
            out[0] = a0 + a1;
            out[s] = (a0 - a1) * w[0];
            break;
          }
          case 4: {
            const C a0 = a[0], a1 = a[in_step], a2 = a[2 * in_step], a3 = a[3 * in_step];
            const C t0 = a0 + a2, t1 = a0 - a2, t2 = a1 + a3, t3 = mul_neg_i(a1 - a3);
            out[0] = t0 + t2;
            out[s] = (t1 + t3) * w[0];
            out[2 * s] = (t0 - t2) * w[1];
            out[3 * s] = (t1 - t3) * w[2];
            break;
          }
          case 3: {
            const C a0 = a[0], a1 = a[in_step], a2 = a[2 * in_step];
            const C t1 = a1 + a2, t2 = a0 - 0.5 * t1, t3 = mul_neg_i(s3 * (a1 - a2));
            out[0] = a0 + t1;
            out[s] = (t2 + t3) * w[0];
            out[2 * s] = (t2 - t3) * w[1];
            break;
          }
          default: {  // 5
            const C a0 = a[0], a1 = a[in_step], a2 = a[2 * in_step], a3 = a[3 * in_step],
                    a4 = a[4 * in_step];
            const C b1 = a1 + a4, b2 = a2 + a3, d1 = a1 - a4, d2 = a2 - a3;
            const C t1 = a0 + c1 * b1 + c2 * b2, t2 = a0 + c2 * b1 + c1 * b2;
            const C u1 = mul_neg_i(s1 * d1 + s2 * d2), u2 = mul_neg_i(s2 * d1 - s1 * d2);
            out[0] = a0 + b1 + b2;
            out[s] = (t1 + u1) * w[0];
            out[2 * s] = (t2 + u2) * w[1];
            out[3 * s] = (t2 - u2) * w[2];
            out[4 * s] = (t1 - u1) * w[3];
            break;
          }
        }
      }
    }
    std::swap(x, y);
  }
  if (x != y && stages_.size() % 2 == 1) {
    // After an odd number of stages the result sits in the second buffer (now `x`); the caller
    // reads the first: copy back.
    for (int i = 0; i < m_; ++i) y[i] = x[i];
  }
}

void RealFft::forward(const double* in, C* out, C* scratch) const {
  // z[j] = x[2j] + i·x[2j+1], transformed in place in `out` (m values) with `scratch` as the
  // Stockham partner buffer.
  C* z = out;
  for (int j = 0; j < m_; ++j) z[j] = C(in[2 * j], in[2 * j + 1]);
  complex_forward(z, scratch);
  // X[k] = E[k] + W^k·O[k], E = (Z[k] + conj Z[m−k]) / 2, O = (Z[k] − conj Z[m−k]) / 2i.
  const C z0 = z[0];
  out[0] = C(z0.real() + z0.imag(), 0.0);
  out[m_] = C(z0.real() - z0.imag(), 0.0);
  for (int k = 1, j = m_ - 1; k <= j; ++k, --j) {
    const C zk = z[k], zj = z[j];
    const C ek = 0.5 * (zk + std::conj(zj)), ok = C(0, -0.5) * (zk - std::conj(zj));
    const C ej = 0.5 * (zj + std::conj(zk)), oj = C(0, -0.5) * (zj - std::conj(zk));
    out[k] = ek + split_[static_cast<std::size_t>(k)] * ok;
    out[j] = ej + split_[static_cast<std::size_t>(j)] * oj;
  }
}

}  // namespace stoker::audio
