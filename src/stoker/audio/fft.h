// A real-input discrete Fourier transform in double precision, written here (no FFTW: GPL; no
// copied source): the length-n real DFT through a length-n/2 complex FFT (even/odd samples
// packed as real/imaginary parts, then one split step), the complex FFT a mixed-radix Stockham
// autosort with radix 2, 3, 4 and 5 butterflies and precomputed twiddles. For the Whisper STFT
// (n = 400 = 2^4 · 5^2: complex length 200 = 4 · 2 · 5 · 5). Output X[0..n/2] of
// X[k] = Σ x[j]·e^(−2πi·jk/n), the convention of numpy.fft.rfft.
// A RealFft is immutable after create(): forward() is const and thread-safe given separate
// scratch. Errors: InvalidArgument (odd n, n < 2, or a prime factor of n/2 above 5).
#pragma once

#include <complex>
#include <cstddef>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::audio {

class RealFft {
 public:
  static Result<RealFft> create(int n);
  RealFft() = default;  // empty until assigned from create()

  int size() const { return n_; }
  // in: n reals; out: n/2 + 1 bins; scratch: at least scratch_size() complex values.
  void forward(const double* in, std::complex<double>* out, std::complex<double>* scratch) const;
  std::size_t scratch_size() const { return static_cast<std::size_t>(n_); }

 private:
  struct Stage {
    int radix = 0;
    int n = 0;       // sub-transform length at this stage
    int stride = 0;  // s
    std::size_t twiddle = 0;  // offset in twiddles_: (n/radix) × (radix − 1) values
  };
  void complex_forward(std::complex<double>* x, std::complex<double>* y) const;

  int n_ = 0, m_ = 0;  // real length, complex length n/2
  std::vector<Stage> stages_;
  std::vector<std::complex<double>> twiddles_;
  std::vector<std::complex<double>> split_;  // e^(−2πi k/n), k = 0..m
};

}  // namespace stoker::audio
