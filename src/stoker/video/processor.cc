#include "stoker/video/processor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stoker/text/labels.h"

namespace stoker::video {
namespace {

std::uint16_t to_bf16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// The one formula of a value (patchify_group and value_table): float32 subtract and divide,
// this file built with -ffp-contract=off (no fused multiply-add).
inline float video_value(std::uint8_t x, float mean255, float std255) {
  return (static_cast<float>(x) - mean255) / std255;
}

void finish_plan(const VideoProcessorConfig& c, VideoPlan* p) {
  const int T = static_cast<int>(p->frames.indices.size());
  const int tps = c.temporal_patch_size;
  p->grid_t = (T + tps - 1) / tps;
  p->grid_h = p->frames.height / c.patch_size;
  p->grid_w = p->frames.width / c.patch_size;
  p->second_per_grid_t = tps / p->frames.sample_fps;
  p->group_seconds = text::video_group_seconds(p->frames.indices, p->frames.video_fps, c.merge_size);
}

}  // namespace

Status VideoProcessorConfig::validate() const {
  if (patch_size <= 0 || temporal_patch_size <= 0 || merge_size <= 0 || patch_size > 64 ||
      temporal_patch_size > 8 || merge_size > 8) {
    return invalid_argument("video processor: bad patch/temporal/merge size");
  }
  for (float s : std) {
    if (!(s > 0)) return invalid_argument("video processor: std must be positive");
  }
  return {};
}

VideoProcessor::VideoProcessor(const VideoProcessorConfig& c) : config_(c) {
  // transformers: torch.tensor(mean) * (1.0 / rescale_factor) — float32 × 255.
  for (int i = 0; i < 3; ++i) {
    mean255_[i] = c.mean[i] * 255.0f;
    std255_[i] = c.std[i] * 255.0f;
  }
}

Result<VideoProcessor> VideoProcessor::create(const VideoProcessorConfig& c) {
  STOKER_RETURN_IF_ERROR(c.validate());
  return VideoProcessor(c);
}

std::int64_t VideoProcessor::columns() const {
  return std::int64_t{3} * config_.temporal_patch_size * config_.patch_size * config_.patch_size;
}

void VideoProcessor::value_table(VideoDType dtype, void* out) const {
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 256; ++x) {
      const float v = video_value(static_cast<std::uint8_t>(x), mean255_[c], std255_[c]);
      if (dtype == VideoDType::kFloat32) {
        static_cast<float*>(out)[256 * c + x] = v;
      } else {
        static_cast<std::uint16_t*>(out)[256 * c + x] = to_bf16(v);
      }
    }
  }
}

Result<VideoPlan> VideoProcessor::plan(const VideoReader& reader, const VideoOptions& options) const {
  const StreamInfo& info = reader.info();
  STOKER_RETURN_IF_ERROR(options.validate());
  const double last_s = static_cast<double>(info.pts.back()) * info.tb_num / info.tb_den;
  if (options.video_start && *options.video_start > last_s) {
    return invalid_argument("video: video_start " + std::to_string(*options.video_start) +
                            " s is beyond the last frame (" + std::to_string(last_s) + " s)");
  }
  ClipRange clip = clip_range(info.pts, info.tb_num, info.tb_den, options.video_start, options.video_end);
  if (clip.count <= 0) {
    double duration = static_cast<double>(info.pts.back()) * info.tb_num / info.tb_den;
    return invalid_argument("video: no frame between video_start " +
                            std::to_string(options.video_start.value_or(0.0)) + " s and video_end " +
                            (options.video_end ? std::to_string(*options.video_end) : std::string("(end)")) +
                            " s (the last frame is at " + std::to_string(duration) + " s)");
  }
  VideoPlan p;
  p.src_width = info.width;
  p.src_height = info.height;
  STOKER_ASSIGN_OR_RETURN(p.frames, plan_frames(options, clip.count, info.average_fps, info.width,
                                                info.height, config_.factor()));
  for (std::int64_t i : p.frames.indices) p.stream_positions.push_back(clip.first + i);
  finish_plan(config_, &p);
  return p;
}

Result<VideoPlan> VideoProcessor::plan_frame_list(int frame_count, int width, int height,
                                                  const VideoOptions& options) const {
  STOKER_RETURN_IF_ERROR(options.validate());
  if (frame_count <= 0) return invalid_argument("video: empty frame list");
  VideoPlan p;
  p.src_width = width;
  p.src_height = height;
  const int n = (frame_count + kFrameFactor - 1) / kFrameFactor * kFrameFactor;
  const double sample_fps = options.sample_fps.value_or(2.0);
  const double raw_fps = options.raw_fps.value_or(sample_fps);
  p.frames.total_frames = n;
  p.frames.video_fps = raw_fps;
  p.frames.sample_fps = sample_fps;
  for (int i = 0; i < n; ++i) {
    p.frames.indices.push_back(i);
    p.stream_positions.push_back(std::min(i, frame_count - 1));
  }
  auto [min_px, max_px] = frame_pixel_bounds(options, n, config_.factor());
  STOKER_ASSIGN_OR_RETURN(FrameSize size, qwen_smart_resize(height, width, config_.factor(), min_px, max_px));
  p.frames.width = size.width;
  p.frames.height = size.height;
  finish_plan(config_, &p);
  return p;
}

Status VideoProcessor::read_frames(VideoReader& reader, const VideoPlan& plan, VideoFrames* out,
                                   DecodeStats* stats) const {
  out->width = plan.frames.width;
  out->height = plan.frames.height;
  out->pixels.resize(static_cast<std::size_t>(out->width) * out->height * 3 *
                     plan.stream_positions.size());
  return read_frames(reader, plan, out->pixels.data(), stats);
}

Status VideoProcessor::read_frames(VideoReader& reader, const VideoPlan& plan, std::uint8_t* out,
                                   DecodeStats* stats) const {
  const int w = plan.frames.width, h = plan.frames.height;
  const std::size_t frame_bytes = static_cast<std::size_t>(w) * h * 3;
  ResizeScratch scratch;
  return reader.decode(plan.stream_positions, [&](std::size_t k, const RgbFrame& f) -> Status {
    resize_bicubic_torch(f.data, f.width, f.height, f.stride, w, h, out + k * frame_bytes, &scratch);
    return {};
  }, stats);
}

void VideoProcessor::patchify_group(const std::uint8_t* const* frames, const VideoPlan& plan,
                                    int gt, VideoDType dtype, void* out) const {
  const int P = config_.patch_size, tps = config_.temporal_patch_size, m = config_.merge_size;
  const int W = plan.frames.width;
  const std::int64_t cols = columns();
  const int hb_n = plan.grid_h / m, wb_n = plan.grid_w / m;
  std::int64_t r = std::int64_t{gt} * plan.grid_h * plan.grid_w;
  STOKER_CHECK(dtype != VideoDType::kUInt8, "patchify_group: uint8 frames are not patchified");
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (int hb = 0; hb < hb_n; ++hb) {
    for (int wb = 0; wb < wb_n; ++wb) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw, ++r) {
          std::size_t k = 0;
          for (int c = 0; c < 3; ++c) {
            for (int tp = 0; tp < tps; ++tp) {
              const std::uint8_t* img = frames[tp];
              for (int py = 0; py < P; ++py) {
                int y = (hb * m + mh) * P + py;
                const std::uint8_t* src = img + (static_cast<std::size_t>(y) * W + (wb * m + mw) * P) * 3 + c;
                for (int px = 0; px < P; ++px) {
                  row[k++] = video_value(src[px * 3], mean255_[c], std255_[c]);
                }
              }
            }
          }
          if (dtype == VideoDType::kFloat32) {
            std::memcpy(static_cast<float*>(out) + r * cols, row.data(), row.size() * sizeof(float));
          } else {
            auto* o = static_cast<std::uint16_t*>(out) + r * cols;
            for (std::size_t i = 0; i < row.size(); ++i) o[i] = to_bf16(row[i]);
          }
        }
      }
    }
  }
}

void VideoProcessor::patchify(const VideoFrames& frames, const VideoPlan& plan, VideoDType dtype,
                              void* out) const {
  patchify(frames.pixels.data(), frames.count(), plan, dtype, out);
}

void VideoProcessor::patchify(const std::uint8_t* frames, std::int64_t count,
                              const VideoPlan& plan, VideoDType dtype, void* out) const {
  const int tps = config_.temporal_patch_size;
  const std::size_t frame_bytes =
      static_cast<std::size_t>(plan.frames.width) * plan.frames.height * 3;
  if (dtype == VideoDType::kUInt8) {  // the frames as they are, the temporal padding repeated
    auto* o = static_cast<std::uint8_t*>(out);
    const std::int64_t total = std::int64_t{plan.grid_t} * tps;
    if (frames != o) std::memcpy(o, frames, static_cast<std::size_t>(std::min(count, total)) * frame_bytes);
    for (std::int64_t t = count; t < total; ++t) {
      std::memcpy(o + static_cast<std::size_t>(t) * frame_bytes,
                  o + static_cast<std::size_t>(count - 1) * frame_bytes, frame_bytes);
    }
    return;
  }
  std::vector<const std::uint8_t*> group(static_cast<std::size_t>(tps));
  for (int gt = 0; gt < plan.grid_t; ++gt) {
    for (int tp = 0; tp < tps; ++tp) {
      // Frames past the end repeat the last one (temporal padding).
      const std::int64_t t = std::min<std::int64_t>(std::int64_t{gt} * tps + tp, count - 1);
      group[static_cast<std::size_t>(tp)] = frames + static_cast<std::size_t>(t) * frame_bytes;
    }
    patchify_group(group.data(), plan, gt, dtype, out);
  }
}

Status VideoProcessor::check_plan(const VideoPlan& plan) const {
  const int P = config_.patch_size, T = config_.temporal_patch_size, m = config_.merge_size;
  const std::int64_t frames = static_cast<std::int64_t>(plan.stream_positions.size());
  if (plan.frames.width != plan.grid_w * P || plan.frames.height != plan.grid_h * P ||
      plan.grid_w <= 0 || plan.grid_h <= 0 || plan.grid_w % m != 0 || plan.grid_h % m != 0 ||
      frames <= 0 || plan.grid_t != (frames + T - 1) / T) {
    return invalid_argument("video plan does not fit this processor (patch " + std::to_string(P) +
                            ", merge " + std::to_string(m) + ", temporal patch " +
                            std::to_string(T) + ")");
  }
  return {};
}

Status VideoProcessor::process(VideoReader& reader, const VideoPlan& plan, VideoDType dtype,
                               void* out, DecodeStats* stats) const {
  STOKER_RETURN_IF_ERROR(check_plan(plan));
  if (dtype == VideoDType::kUInt8) {  // decoded and resized straight into `out`
    STOKER_RETURN_IF_ERROR(read_frames(reader, plan, static_cast<std::uint8_t*>(out), stats));
    patchify(static_cast<const std::uint8_t*>(out),
             static_cast<std::int64_t>(plan.stream_positions.size()), plan, dtype, out);
    return {};
  }
  const int tps = config_.temporal_patch_size;
  const std::size_t frame_bytes = static_cast<std::size_t>(plan.frames.width) * plan.frames.height * 3;
  std::vector<std::uint8_t> buf(frame_bytes * static_cast<std::size_t>(tps));
  std::vector<const std::uint8_t*> group(static_cast<std::size_t>(tps));
  for (int tp = 0; tp < tps; ++tp) group[static_cast<std::size_t>(tp)] = buf.data() + tp * frame_bytes;
  ResizeScratch scratch;
  const std::size_t n = plan.stream_positions.size();
  STOKER_RETURN_IF_ERROR(reader.decode(plan.stream_positions, [&](std::size_t k, const RgbFrame& f) -> Status {
    const std::size_t tp = k % static_cast<std::size_t>(tps);
    resize_bicubic_torch(f.data, f.width, f.height, f.stride, plan.frames.width, plan.frames.height,
                         buf.data() + tp * frame_bytes, &scratch);
    const bool last = k + 1 == n;
    if (tp + 1 == static_cast<std::size_t>(tps) || last) {
      for (std::size_t p = tp + 1; p < static_cast<std::size_t>(tps); ++p) group[p] = group[tp];
      patchify_group(group.data(), plan, static_cast<int>(k / static_cast<std::size_t>(tps)), dtype, out);
      for (int q = 0; q < tps; ++q) group[static_cast<std::size_t>(q)] = buf.data() + q * frame_bytes;
    }
    return {};
  }, stats));
  return {};
}

Result<ProcessedVideo> process_video(std::span<const std::uint8_t> bytes,
                                     const VideoProcessor& processor, const VideoOptions& options) {
  STOKER_ASSIGN_OR_RETURN(auto reader, VideoReader::open(bytes, processor.config().limits));
  ProcessedVideo v;
  v.info = reader->info();
  STOKER_ASSIGN_OR_RETURN(v.plan, processor.plan(*reader, options));
  // pixel_values from the production (streaming) path; the frames from a second decode.
  v.pixel_values.resize(static_cast<std::size_t>(v.plan.rows() * processor.columns()));
  STOKER_RETURN_IF_ERROR(processor.process(*reader, v.plan, VideoDType::kFloat32,
                                           v.pixel_values.data(), &v.stats));
  STOKER_ASSIGN_OR_RETURN(auto again, VideoReader::open(bytes, processor.config().limits));
  STOKER_RETURN_IF_ERROR(processor.read_frames(*again, v.plan, &v.frames));
  return v;
}

}  // namespace stoker::video
