#include "stoker/video/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stoker::video {
namespace {

bool bad(const std::optional<double>& v) { return v && (!std::isfinite(*v) || *v < 0); }

// Python math.floor / math.ceil of a double, to a double (values here stay far below 2^53).
double py_floor_by(double x, double f) { return std::floor(x / f) * f; }
double py_ceil_by(double x, double f) { return std::ceil(x / f) * f; }

}  // namespace

Status VideoOptions::validate() const {
  if (fps && nframes) return invalid_argument("video: give either fps or nframes, not both");
  for (const auto* v : {&fps, &nframes, &min_frames, &max_frames, &video_start, &video_end,
                        &min_pixels, &max_pixels, &total_pixels, &sample_fps, &raw_fps}) {
    if (bad(*v)) return invalid_argument("video: options must be finite and non-negative");
  }
  if (fps && *fps == 0) return invalid_argument("video: fps must be positive");
  if (sample_fps && *sample_fps == 0) return invalid_argument("video: sample_fps must be positive");
  if (video_start && video_end && *video_end < *video_start) {
    return invalid_argument("video: video_end (" + std::to_string(*video_end) +
                            ") is before video_start (" + std::to_string(*video_start) + ")");
  }
  return {};
}

double round_half_even(double x) { return std::nearbyint(x); }  // default FE_TONEAREST

Result<int> smart_nframes(const VideoOptions& o, std::int64_t total_frames, double video_fps) {
  double n = 0;
  if (o.nframes) {
    n = round_half_even(*o.nframes / kFrameFactor) * kFrameFactor;
  } else {
    if (!(video_fps > 0) || !std::isfinite(video_fps)) {
      return invalid_argument("video: the stream has no usable frame rate");
    }
    double fps = o.fps.value_or(kDefaultFps);
    double min_f = py_ceil_by(o.min_frames.value_or(kFpsMinFrames), kFrameFactor);
    double max_f = py_floor_by(
        o.max_frames.value_or(static_cast<double>(std::min<std::int64_t>(kFpsMaxFrames, total_frames))),
        kFrameFactor);
    n = static_cast<double>(total_frames) / video_fps * fps;
    n = std::min(std::min(std::max(n, min_f), max_f), static_cast<double>(total_frames));
    n = py_floor_by(n, kFrameFactor);
  }
  if (!(n >= kFrameFactor && n <= static_cast<double>(total_frames))) {
    return invalid_argument("video: nframes should be in [2, " + std::to_string(total_frames) +
                            "] (the clip's frame count), got " +
                            std::to_string(static_cast<long long>(n)));
  }
  return static_cast<int>(n);
}

std::vector<std::int64_t> linspace_round(double start_d, double end_d, std::int64_t steps) {
  std::vector<std::int64_t> out;
  if (steps <= 0) return out;
  const float start = static_cast<float>(start_d), end = static_cast<float>(end_d);
  out.resize(static_cast<std::size_t>(steps));
  if (steps == 1) {
    out[0] = static_cast<std::int64_t>(std::nearbyint(start));
    return out;
  }
  // Compiled with -ffp-contract=off: the products and sums below are fused exactly where the
  // torch 1.13 AVX2 build fuses them (std::fma: the block base), nowhere else (the lanes of
  // Vectorized::arange). Checked against torch on ~6,000 (start, end, steps) cases.
  const float step = (end - start) / static_cast<float>(steps - 1);
  const std::int64_t halfway = steps / 2;
  auto scalar_at = [&](std::int64_t idx) -> float {
    if (idx < halfway) return std::fma(step, static_cast<float>(idx), start);
    return std::fma(-step, static_cast<float>(steps - idx - 1), end);
  };
  constexpr std::int64_t kLanes = 8;  // AVX2 Vectorized<float>
  std::int64_t i = 0;
  for (; i + 2 * kLanes <= steps; i += 2 * kLanes) {
    for (std::int64_t v = 0; v < 2; ++v) {
      std::int64_t idx = i + v * kLanes;
      float base = scalar_at(idx);
      for (std::int64_t k = 0; k < kLanes; ++k) {
        float value = k == 0 ? base : base + static_cast<float>(k) * step;  // not fused
        out[static_cast<std::size_t>(idx + k)] = static_cast<std::int64_t>(std::nearbyint(value));
      }
    }
  }
  for (; i < steps; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(std::nearbyint(scalar_at(i)));
  return out;
}

ClipRange clip_range(const std::vector<std::int64_t>& pts, int tb_num, int tb_den,
                     std::optional<double> video_start, std::optional<double> video_end) {
  // torchvision: start_offset = floor(start · (1/tb)), end_offset = ceil(end · (1/tb)) (inf if
  // unset); `1/tb` is float(Fraction(den, num)).
  const double inv_tb = static_cast<double>(tb_den) / static_cast<double>(tb_num);
  const double start_s = video_start.value_or(0.0);
  const double start_off = std::floor(start_s * inv_tb);
  const double end_off = video_end ? std::ceil(*video_end * inv_tb)
                                   : std::numeric_limits<double>::infinity();
  auto lo = std::lower_bound(pts.begin(), pts.end(), start_off,
                             [](std::int64_t p, double v) { return static_cast<double>(p) < v; });
  auto hi = std::upper_bound(pts.begin(), pts.end(), end_off,
                             [](double v, std::int64_t p) { return v < static_cast<double>(p); });
  ClipRange r;
  r.first = lo - pts.begin();
  r.count = std::max<std::int64_t>(0, hi - lo);
  bool exact = lo != pts.end() && static_cast<double>(*lo) == start_off;
  if (start_off > 0 && !exact && lo != pts.begin()) {
    // The last frame before the start is prepended (torchvision's "preceding frame").
    r.first -= 1;
    r.count += 1;
  }
  return r;
}

Result<FrameSize> qwen_smart_resize(int height, int width, int factor, double min_pixels,
                                    double max_pixels) {
  if (height <= 0 || width <= 0) return invalid_argument("video: empty frame size");
  if (!(max_pixels >= min_pixels)) {
    return invalid_argument("video: max_pixels (" + std::to_string(max_pixels) +
                            ") is below min_pixels (" + std::to_string(min_pixels) + ")");
  }
  double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
  if (ratio > 200) {
    return invalid_argument("video: absolute aspect ratio must be smaller than 200, got " +
                            std::to_string(ratio));
  }
  const double f = factor;
  double h_bar = std::max(f, round_half_even(height / f) * f);
  double w_bar = std::max(f, round_half_even(width / f) * f);
  const double hw = static_cast<double>(height) * width;
  if (h_bar * w_bar > max_pixels) {
    double beta = std::sqrt(hw / max_pixels);
    h_bar = py_floor_by(height / beta, f);
    w_bar = py_floor_by(width / beta, f);
  } else if (h_bar * w_bar < min_pixels) {
    double beta = std::sqrt(min_pixels / hw);
    h_bar = py_ceil_by(height * beta, f);
    w_bar = py_ceil_by(width * beta, f);
  }
  if (h_bar < f || w_bar < f || h_bar > 1e6 || w_bar > 1e6) {
    return invalid_argument("video: frame " + std::to_string(width) + "x" + std::to_string(height) +
                            " resizes to " + std::to_string(static_cast<long long>(w_bar)) + "x" +
                            std::to_string(static_cast<long long>(h_bar)) +
                            " under max_pixels " + std::to_string(max_pixels));
  }
  return FrameSize{static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

std::pair<double, double> frame_pixel_bounds(const VideoOptions& o, int nframes, int factor) {
  const double f2 = static_cast<double>(factor) * factor;
  const double frame_min = kVideoMinTokens * f2, frame_max = kVideoMaxTokens * f2;
  double min_pixels = o.min_pixels.value_or(frame_min);
  double total = o.total_pixels.value_or(static_cast<double>(kModelSeqLen) * f2 * 0.9);
  double max_pixels = std::max(std::min(frame_max, total / nframes * kFrameFactor),
                               std::trunc(min_pixels * 1.05));
  if (o.max_pixels) max_pixels = std::min(*o.max_pixels, max_pixels);
  return {min_pixels, max_pixels};
}

Result<FramePlan> plan_frames(const VideoOptions& o, std::int64_t total_frames, double video_fps,
                              int src_width, int src_height, int factor) {
  STOKER_RETURN_IF_ERROR(o.validate());
  if (total_frames <= 0) return invalid_argument("video: the clip has no frames");
  if (!(video_fps > 0) || !std::isfinite(video_fps)) {
    return invalid_argument("video: the stream has no usable average frame rate");
  }
  FramePlan p;
  p.total_frames = total_frames;
  p.video_fps = video_fps;
  STOKER_ASSIGN_OR_RETURN(int n, smart_nframes(o, total_frames, video_fps));
  p.indices = linspace_round(0.0, static_cast<double>(total_frames - 1), n);
  p.sample_fps = n / std::max(static_cast<double>(total_frames), 1e-6) * video_fps;
  auto [min_px, max_px] = frame_pixel_bounds(o, n, factor);
  STOKER_ASSIGN_OR_RETURN(FrameSize size,
                          qwen_smart_resize(src_height, src_width, factor, min_px, max_px));
  p.width = size.width;
  p.height = size.height;
  return p;
}

}  // namespace stoker::video
