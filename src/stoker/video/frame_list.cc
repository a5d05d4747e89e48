#include "stoker/video/frame_list.h"

#include <cstring>
#include <string>

#include "stoker/image/decode.h"
#include "stoker/image/resample.h"
#include "stoker/video/resize.h"

namespace stoker::video {
namespace {

// qwen-vl-utils fetch_image's size for one frame: smart_resize with the element's min/max_pixels
// or the image defaults (4·f², 16384·f²).
Result<FrameSize> frame_image_size(int factor, const VideoOptions& o,
                                   std::span<const std::uint8_t> bytes) {
  STOKER_ASSIGN_OR_RETURN(image::ImageHeader h, image::probe_image(bytes));
  const double f = factor;
  return qwen_smart_resize(h.height, h.width, factor, o.min_pixels.value_or(4 * f * f),
                           o.max_pixels.value_or(16384 * f * f));
}

}  // namespace

Result<FrameListPlan> plan_frame_list(const VideoProcessor& processor, const VideoOptions& options,
                                      std::span<const std::vector<std::uint8_t>> frames) {
  FrameListPlan out;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    Result<FrameSize> size = frame_image_size(processor.config().factor(), options, frames[k]);
    if (!size.ok()) return Error(size.error()).with_context("frame " + std::to_string(k));
    if (k == 0) {
      out.frame_width = size->width;
      out.frame_height = size->height;
    } else if (size->width != out.frame_width || size->height != out.frame_height) {
      return invalid_argument("frame " + std::to_string(k) + " resizes to " +
                              std::to_string(size->width) + "x" + std::to_string(size->height) +
                              ", frame 0 to " + std::to_string(out.frame_width) + "x" +
                              std::to_string(out.frame_height) + " (frames must stack)");
    }
  }
  STOKER_ASSIGN_OR_RETURN(out.plan, processor.plan_frame_list(static_cast<int>(frames.size()),
                                                              out.frame_width, out.frame_height,
                                                              options));
  return out;
}

Status read_frame_list(const FrameListPlan& p, std::span<const std::vector<std::uint8_t>> frames,
                       std::uint8_t* out) {
  const VideoPlan& plan = p.plan;
  const std::size_t frame_bytes =
      static_cast<std::size_t>(plan.frames.width) * plan.frames.height * 3;
  image::RgbImage decoded, sized;
  ResizeScratch scratch;
  std::int64_t done = -1;
  for (std::size_t k = 0; k < plan.stream_positions.size(); ++k) {
    const std::int64_t i = plan.stream_positions[k];
    std::uint8_t* frame = out + k * frame_bytes;
    if (i == done) {  // the padding frame repeats the last one
      std::memcpy(frame, frame - frame_bytes, frame_bytes);
      continue;
    }
    Status st = image::decode_rgb(frames[static_cast<std::size_t>(i)], {}, &decoded);
    if (!st.ok()) return Error(st.error()).with_context("frame " + std::to_string(i));
    image::resize_bicubic_exact(decoded, p.frame_width, p.frame_height, &sized);
    resize_bicubic_torch(sized.pixels.data(), sized.width, sized.height,
                         static_cast<std::size_t>(sized.width) * 3, plan.frames.width,
                         plan.frames.height, frame, &scratch);
    done = i;
  }
  return {};
}

Status process_frame_list(const VideoProcessor& processor, const FrameListPlan& p,
                          std::span<const std::vector<std::uint8_t>> frames, VideoDType dtype,
                          void* out) {
  STOKER_RETURN_IF_ERROR(processor.check_plan(p.plan));
  if (dtype == VideoDType::kUInt8) {  // resized straight into `out`
    auto* o = static_cast<std::uint8_t*>(out);
    STOKER_RETURN_IF_ERROR(read_frame_list(p, frames, o));
    processor.patchify(o, static_cast<std::int64_t>(p.plan.stream_positions.size()), p.plan,
                       dtype, out);
    return {};
  }
  std::vector<std::uint8_t> resized(p.frames_bytes());
  STOKER_RETURN_IF_ERROR(read_frame_list(p, frames, resized.data()));
  processor.patchify(resized.data(), static_cast<std::int64_t>(p.plan.stream_positions.size()),
                     p.plan, dtype, out);
  return {};
}

}  // namespace stoker::video
