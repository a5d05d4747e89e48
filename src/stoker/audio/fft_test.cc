#include "stoker/audio/fft.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace stoker::audio {
namespace {

// The textbook O(n²) DFT in long double: X[k] = Σ x[j]·e^(−2πi·jk/n).
std::vector<std::complex<long double>> naive_rdft(const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<std::complex<long double>> out(n / 2 + 1);
  const long double pi = 3.141592653589793238462643383279502884L;
  for (std::size_t k = 0; k <= n / 2; ++k) {
    std::complex<long double> acc = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const long double a = -2 * pi * static_cast<long double>((j * k) % n) / static_cast<long double>(n);
      acc += static_cast<long double>(x[j]) * std::complex<long double>(std::cos(a), std::sin(a));
    }
    out[k] = acc;
  }
  return out;
}

TEST(RealFftTest, MatchesTheNaiveDftForEverySupportedRadixMix) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> gauss;
  for (int n : {2, 4, 6, 8, 10, 12, 16, 18, 30, 50, 64, 100, 200, 250, 400, 486, 1000}) {
    auto fft = RealFft::create(n);
    ASSERT_TRUE(fft.ok()) << n;
    std::vector<double> x(static_cast<std::size_t>(n));
    for (double& v : x) v = gauss(rng);
    std::vector<std::complex<double>> out(static_cast<std::size_t>(n / 2 + 1)), scratch(fft->scratch_size());
    fft->forward(x.data(), out.data(), scratch.data());
    const auto ref = naive_rdft(x);
    double scale = 0;
    for (const auto& c : ref) scale = std::max(scale, static_cast<double>(std::abs(c)));
    for (std::size_t k = 0; k < ref.size(); ++k) {
      EXPECT_NEAR(out[k].real(), static_cast<double>(ref[k].real()), 1e-13 * scale) << "n=" << n << " k=" << k;
      EXPECT_NEAR(out[k].imag(), static_cast<double>(ref[k].imag()), 1e-13 * scale) << "n=" << n << " k=" << k;
    }
  }
}

TEST(RealFftTest, RefusesLengthsItCannotFactor) {
  EXPECT_FALSE(RealFft::create(0).ok());
  EXPECT_FALSE(RealFft::create(7).ok());
  EXPECT_FALSE(RealFft::create(14).ok());   // 7
  EXPECT_FALSE(RealFft::create(2 * 11).ok());
}

TEST(RealFftTest, PureToneLandsInItsBin) {
  auto fft = RealFft::create(400);
  ASSERT_TRUE(fft.ok());
  std::vector<double> x(400);
  for (int j = 0; j < 400; ++j) x[static_cast<std::size_t>(j)] = std::cos(2 * M_PI * 37 * j / 400.0);
  std::vector<std::complex<double>> out(201), scratch(fft->scratch_size());
  fft->forward(x.data(), out.data(), scratch.data());
  for (int k = 0; k <= 200; ++k) {
    EXPECT_NEAR(std::abs(out[static_cast<std::size_t>(k)]), k == 37 ? 200.0 : 0.0, 1e-9) << k;
  }
}

}  // namespace
}  // namespace stoker::audio
