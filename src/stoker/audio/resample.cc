#include "stoker/audio/resample.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace stoker::audio {
namespace {

// numpy's FLOAT_pairwise_sum (loops_utils.h.src) over n values at stride `stride`.
float pairwise_sum(const float* a, std::int64_t n, int stride) {
  if (n < 8) {
    float res = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) res += a[i * stride];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j * stride];
    const std::int64_t n8 = n - n % 8;
    for (std::int64_t i = 8; i < n8; i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[(i + j) * stride];
    }
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (std::int64_t i = n8; i < n; ++i) res += a[i * stride];
    return res;
  }
  std::int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2, stride) + pairwise_sum(a + n2 * stride, n - n2, stride);
}

}  // namespace

void mix_to_mono(const float* in, std::int64_t frames, int channels, float* out) {
  if (channels == 1) {
    std::copy(in, in + frames, out);
    return;
  }
  const float c = static_cast<float>(channels);
  if (channels == 2) {
    for (std::int64_t i = 0; i < frames; ++i) out[i] = ((0.0f + in[2 * i]) + in[2 * i + 1]) / c;
    return;
  }
  for (std::int64_t i = 0; i < frames; ++i) out[i] = pairwise_sum(in + i * channels, channels, 1) / c;
}

std::int64_t resampled_length(std::int64_t n, double orig_rate, double target_rate) {
  const double ratio = target_rate / orig_rate;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(n) * ratio));
}

Result<SoxrStream> SoxrStream::create(double in_rate, double out_rate) {
  if (!(in_rate > 0) || !(out_rate > 0)) return invalid_argument("resample: rates must be > 0");
  SoxrStream s;
  s.in_rate_ = in_rate;
  s.out_rate_ = out_rate;
  // python-soxr: div_len = std::max(1000., 48000 * in_rate / out_rate), stored in a size_t.
  s.chunk_ = static_cast<std::int64_t>(std::max(1000.0, 48000 * in_rate / out_rate));
  soxr_error_t err = nullptr;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S);
  const soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  soxr_t h = soxr_create(in_rate, out_rate, 1, &err, &io, &q, nullptr);
  if (err || !h) return internal_error(std::string("resample: soxr_create: ") + (err ? err : "failed"));
  s.soxr_ = h;
  return s;
}

SoxrStream::SoxrStream(SoxrStream&& o) noexcept
    : soxr_(o.soxr_), in_rate_(o.in_rate_), out_rate_(o.out_rate_), chunk_(o.chunk_),
      total_in_(o.total_in_), produced_(o.produced_), pending_(std::move(o.pending_)) {
  o.soxr_ = nullptr;
}

SoxrStream::~SoxrStream() {
  if (soxr_) soxr_delete(static_cast<soxr_t>(soxr_));
}

Status SoxrStream::process(const float* in, std::size_t n, std::vector<float>* out) {
  // Output room well above what one chunk can produce (python-soxr's room is the rest of the
  // whole clip's buffer: never the limit before the flush).
  const std::size_t room = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * out_rate_ / in_rate_)) + 65536;
  const std::size_t at = out->size();
  out->resize(at + room);
  float* obuf = out->data() + at;
  const void* ibufs[1] = {in};
  void* obufs[1] = {obuf};
  std::size_t odone = 0;
  soxr_error_t err = soxr_process(static_cast<soxr_t>(soxr_), ibufs, n, nullptr, obufs, room, &odone);
  out->resize(at + odone);
  produced_ += odone;
  if (err) return internal_error(std::string("resample: soxr_process: ") + err);
  return {};
}

Status SoxrStream::push(std::span<const float> in, std::vector<float>* out) {
  total_in_ += static_cast<std::int64_t>(in.size());
  const std::size_t chunk = static_cast<std::size_t>(chunk_);
  std::size_t i = 0;
  if (!pending_.empty()) {
    const std::size_t take = std::min(chunk - pending_.size(), in.size());
    pending_.insert(pending_.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(take));
    i = take;
    if (pending_.size() < chunk) return {};
    STOKER_RETURN_IF_ERROR(process(pending_.data(), chunk, out));
    pending_.clear();
  }
  for (; i + chunk <= in.size(); i += chunk) STOKER_RETURN_IF_ERROR(process(in.data() + i, chunk, out));
  pending_.assign(in.begin() + static_cast<std::ptrdiff_t>(i), in.end());
  return {};
}

Status SoxrStream::finish(std::vector<float>* out) {
  if (!pending_.empty()) {
    STOKER_RETURN_IF_ERROR(process(pending_.data(), pending_.size(), out));
    pending_.clear();
  }
  // The flush: one call, with python-soxr's remaining room olen − out_pos,
  // olen = size_t(ilen · out_rate / in_rate + 1).
  const double olen_d = static_cast<double>(total_in_) * out_rate_ / in_rate_ + 1;
  const std::size_t olen = static_cast<std::size_t>(olen_d);
  const std::size_t start = out->size() - produced_;  // where this stream's output begins
  const std::size_t produced = produced_;
  if (produced > olen) out->resize(start + olen);  // python-soxr's buffer holds olen values
  const std::size_t room = olen - std::min(olen, produced);
  const std::size_t at = out->size();
  out->resize(at + room);
  void* obufs[1] = {out->data() + at};
  std::size_t odone = 0;
  soxr_error_t err = soxr_process(static_cast<soxr_t>(soxr_), nullptr, 0, nullptr, obufs, room, &odone);
  out->resize(at + odone);
  if (err) return internal_error(std::string("resample: soxr_process (flush): ") + err);
  // librosa's fix_length.
  out->resize(start + static_cast<std::size_t>(resampled_length(total_in_, in_rate_, out_rate_)), 0.0f);
  return {};
}

}  // namespace stoker::audio
