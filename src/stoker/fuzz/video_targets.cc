// video: a container's bytes (byte 0 = sampling options) → VideoReader::open (the AVIOContext
// over memory, the packet scan) → VideoProcessor::plan (qwen-vl-utils' sampling and frame size)
// → process() (seek + decode of the planned frames, RGB conversion, resize, normalise, temporal
// patchify). FFmpeg's own libraries are Debian's, uninstrumented: their bugs show only through
// what they do to our memory. Seeds: tiny videos from synth's encoder (H.264 with B-frames, VFR,
// an audio track, a rotation tag, MPEG-4, VP9 and AV1 where this FFmpeg encodes them, 1 frame).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/synth/video.h"
#include "stoker/video/decode.h"
#include "stoker/video/processor.h"

namespace stoker::fuzz {
namespace {

// Caps as in production, smaller: a frame of 1 Mpx at most (the image targets' cap), 2,048
// packets, 20 s of wall time per input; output frames of at most 28·28·16 pixels.
constexpr int kFactor = 28;
constexpr double kMaxOutPixels = kFactor * kFactor * 16;

const video::VideoProcessor& processor() {
  static const video::VideoProcessor p = [] {
    video::VideoProcessorConfig c;
    c.limits = {.max_side = 4096, .max_frame_pixels = std::int64_t{1} << 20, .max_frames = 2048,
                .max_seconds = 20, .threads = 1};
    Result<video::VideoProcessor> r = video::VideoProcessor::create(c);
    check(r.ok(), "the video processor config is valid");
    return *std::move(r);
  }();
  return p;
}

void run_video(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  const std::uint8_t opt = data[0];
  const std::span<const std::uint8_t> bytes(data + 1, size - 1);
  const video::VideoProcessor& proc = processor();
  const video::DecodeLimits& lim = proc.config().limits;
  Result<std::unique_ptr<video::VideoReader>> reader = video::VideoReader::open(bytes, lim);
  if (!reader.ok()) {
    check_error_named(reader);
    return;
  }
  const video::StreamInfo& info = (*reader)->info();
  check(info.width > 0 && info.height > 0 && info.width <= lim.max_side &&
            info.height <= lim.max_side &&
            std::int64_t{info.width} * info.height <= lim.max_frame_pixels,
        "an opened stream's frame size is within the limits");
  check(!info.pts.empty() && static_cast<std::int64_t>(info.pts.size()) <= lim.max_frames,
        "an opened stream has frames, no more than the packet cap");
  for (std::size_t i = 1; i < info.pts.size(); ++i)
    check(info.pts[i - 1] < info.pts[i], "frame pts ascending and unique");
  check(info.tb_num > 0 && info.tb_den > 0, "a positive time base");

  video::VideoOptions o;
  switch (opt & 3) {
    case 0: break;  // qwen-vl-utils' defaults (fps 2)
    case 1: o.nframes = 2.0 * (1 + ((opt >> 2) & 3)); break;
    case 2: o.fps = 0.5 * (1 + ((opt >> 2) & 7)); break;
    case 3:
      o.video_start = 0.25 * ((opt >> 2) & 3);
      o.video_end = *o.video_start + 0.5 * (1 + ((opt >> 4) & 3));
      break;
  }
  o.max_pixels = kMaxOutPixels;
  Result<video::VideoPlan> plan = proc.plan(**reader, o);
  if (!plan.ok()) {
    check_error_named(plan);
    return;
  }
  const std::vector<std::int64_t>& idx = plan->frames.indices;
  check(!idx.empty() && idx.size() == plan->stream_positions.size(), "one stream position per frame");
  for (std::size_t i = 0; i < idx.size(); ++i) {
    check(idx[i] >= 0 && idx[i] < plan->frames.total_frames, "frame indices inside the clip");
    check(i == 0 || idx[i - 1] <= idx[i], "frame indices ascending");
    check(plan->stream_positions[i] >= 0 &&
              plan->stream_positions[i] < static_cast<std::int64_t>(info.pts.size()),
          "stream positions inside the scan");
  }
  const int ps = proc.config().patch_size, tps = proc.config().temporal_patch_size;
  check(plan->frames.width % kFactor == 0 && plan->frames.height % kFactor == 0 &&
            plan->frames.width > 0 && plan->frames.height > 0,
        "frame size a positive multiple of patch·merge");
  check(plan->frames.width * plan->frames.height <= kMaxOutPixels ||
            plan->frames.width == kFactor || plan->frames.height == kFactor,
        "frame size within max_pixels (or one side = factor, as qwen-vl-utils)");
  check(plan->grid_h * ps == plan->frames.height && plan->grid_w * ps == plan->frames.width &&
            plan->grid_t == static_cast<int>((idx.size() + tps - 1) / tps),
        "grid = frames / patches");
  check(std::isfinite(plan->second_per_grid_t) && plan->second_per_grid_t > 0,
        "second_per_grid_t positive");

  std::vector<float> out(static_cast<std::size_t>(plan->rows() * proc.columns()), NAN);
  video::DecodeStats stats;
  Status s = proc.process(**reader, *plan, video::VideoDType::kFloat32, out.data(), &stats);
  if (!s.ok()) {
    check_error_named(s);
    return;
  }
  // Every value written, each one a normalised uint8: (x − 255·mean) / (255·std) lies in
  // [−mean/std, (1 − mean)/std] ⊂ [−2, 2.2] for CLIP's mean and std.
  for (float v : out) check(v >= -2.0f && v <= 2.2f, "pixel_values written and in range");
  check(stats.frames_converted >= 1, "a processed video converted frames");
}

void video_seeds(const std::string& dir) {
  struct Kind {
    const char* name;
    synth::VideoSpec spec;
  };
  const Kind kinds[] = {
      {"h264-bframes", {.codec = "h264", .width = 64, .height = 48, .frames = 12, .gop = 12, .bframes = 2}},
      {"h264-vfr-odd", {.codec = "h264", .width = 45, .height = 33, .frames = 10, .gop = 4, .bframes = 1, .vfr = true}},
      {"h264-audio-rot", {.codec = "h264", .width = 48, .height = 32, .frames = 8, .gop = 8, .bframes = 0, .audio = true, .rotation = 90}},
      {"mpeg4-2997", {.codec = "mpeg4", .width = 64, .height = 48, .fps_num = 30000, .fps_den = 1001, .frames = 10, .gop = 5}},
      {"vp9", {.codec = "vp9", .width = 64, .height = 36, .frames = 8, .gop = 8, .bframes = 0}},
      {"av1", {.codec = "av1", .width = 64, .height = 36, .frames = 6, .gop = 6, .bframes = 0}},
      {"one-frame", {.codec = "h264", .width = 32, .height = 32, .frames = 1, .gop = 1, .bframes = 0}},
  };
  for (const Kind& k : kinds) {
    if (!synth::can_encode(k.spec.codec)) continue;
    Result<std::vector<std::uint8_t>> v = synth::encode_video(k.spec);
    if (!v.ok()) {
      std::fprintf(stderr, "video seeds: %s: %s\n", k.name, v.error().to_string().c_str());
      continue;
    }
    for (std::uint8_t opt : {0x00, 0x05, 0x0a, 0x17}) {  // default, nframes 4, fps 1.5, a range
      std::string bytes(1, static_cast<char>(opt));
      bytes.append(v->begin(), v->end());
      write_seed(dir, std::string(k.name) + "-" + std::to_string(opt), bytes);
    }
  }
}

}  // namespace

const Target kVideoTarget{"video", "video container: open (AVIO + packet scan), plan (qwen-vl-utils sampling), process (decode, resize, patchify)",
                          nullptr, run_video, video_seeds};

}  // namespace stoker::fuzz
