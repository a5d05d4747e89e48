// The two steps librosa 0.11 takes between decoding and the 16 kHz waveform, bit for bit:
// - mix_to_mono: `np.mean(y, axis=0)` on float32 (C, n): numpy's pairwise float32 sum over the
//   channels (sequential below 8 channels, 8 accumulators up to 128, halves above) divided by
//   float32(C); one channel is returned untouched.
// - SoxrStream: `soxr.resample(y, sr, 16000, quality="soxr_hq")` as python-soxr runs it for a
//   1-D float32 array (libsoxr 0.1.3, soxr_quality_spec(SOXR_HQ = 20-bit, linear phase,
//   passband 0.913), float32 split-channel I/O, input fed in chunks of max(1000, 48000·in/out)
//   samples, one flush call with an output space of n·out/in + 1 − produced), then
//   `fix_length(size=int(np.ceil(n · (16000 / sr))))`: cut, or zero-padded.
// SoxrStream is move-only, single-threaded. Errors: InvalidArgument (rates), Internal (libsoxr).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::audio {

// out[i] = mean of the `channels` samples of frame i (interleaved input).
void mix_to_mono(const float* interleaved, std::int64_t frames, int channels, float* out);

// librosa's target length: int(np.ceil(n * (float(target) / orig))) in double precision (not the
// exact ceil(n·target/orig): the double product can land just above an integer).
std::int64_t resampled_length(std::int64_t n, double orig_rate, double target_rate = 16000);

class SoxrStream {
 public:
  static Result<SoxrStream> create(double in_rate, double out_rate);
  SoxrStream(SoxrStream&& o) noexcept;
  SoxrStream& operator=(SoxrStream&&) = delete;
  SoxrStream(const SoxrStream&) = delete;
  ~SoxrStream();

  // Appends mono input; every full chunk goes through libsoxr, its output appended to `out`
  // (the same vector on every call: finish() cuts and pads this stream's part of it).
  Status push(std::span<const float> in, std::vector<float>* out);
  // The last partial chunk, the flush, then the length fix to resampled_length(total input).
  Status finish(std::vector<float>* out);

  std::int64_t chunk() const { return chunk_; }

 private:
  SoxrStream() = default;
  Status process(const float* in, std::size_t n, std::vector<float>* out);

  void* soxr_ = nullptr;  // soxr_t (soxr.h stays out of this header)
  double in_rate_ = 0, out_rate_ = 0;
  std::int64_t chunk_ = 0;
  std::int64_t total_in_ = 0;
  std::size_t produced_ = 0;  // values appended to the caller's vector so far
  std::vector<float> pending_;
};

}  // namespace stoker::audio
