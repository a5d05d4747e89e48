#include "stoker/pipeline/prepare.h"

#include "stoker/base/clock.h"

#include <cstring>

namespace stoker::pipeline {
namespace {

SampleFailure failure(const Context& ctx, const Item& item, FailureStage stage, const Error& e) {
  const dataset::RecordOrigin at = ctx.records->origin(item.sample);
  return {item.sample, std::string(at.name), at.line, stage, e.code(), e.to_string()};
}

// Times one stage on this thread.
class StageTimer {
 public:
  StageTimer(const Context& ctx, int stage) : ctx_(ctx), stage_(stage), start_(now_ns()) {}
  ~StageTimer() { ctx_.counters.add(stage_, now_ns() - start_); }

 private:
  const Context& ctx_;
  int stage_;
  std::int64_t start_;
};

}  // namespace

const char* stage_name(int stage) {
  static const char* kNames[kNumStages] = {"read", "fetch", "prepare", "emit", "assemble"};
  return stage >= 0 && stage < kNumStages ? kNames[stage] : "?";
}

Fetched read_stage(const Context& ctx, const Item& item, std::vector<std::string>* uris_out) {
  Fetched out;
  out.item = item;
  std::vector<std::string>& uris = *uris_out;
  {
    StageTimer timer(ctx, kRead);
    obs::Span span(ctx.trace_for(item), "read", "sample", static_cast<std::int64_t>(item.sample));
    std::string record;
    if (Status st = ctx.records->read(item.sample, record); !st.ok()) {
      out.failure = failure(ctx, item, FailureStage::kRead, st.error());
      return out;
    }
    Result<dataset::Conversation> conv = dataset::parse_record(record);
    if (!conv.ok()) {
      out.failure = failure(ctx, item, FailureStage::kParse, conv.error());
      return out;
    }
    if (Status st = dataset::validate_for_sft(*conv); !st.ok()) {
      out.failure = failure(ctx, item, FailureStage::kValidate, st.error());
      return out;
    }
    out.conversation = std::move(conv).value();
    const dataset::MediaResolver& media = ctx.records->media(item.sample);
    for (const dataset::Message& m : out.conversation.messages) {
      for (const dataset::Part& p : m.parts) {
        if (p.kind == dataset::Part::Kind::kText) continue;
        // An image, a video file, or a video's frames: one fetch each, in part order.
        const bool frames = p.kind == dataset::Part::Kind::kVideo && !p.frames.empty();
        const std::vector<std::string> one = {p.value};
        for (const std::string& ref : frames ? p.frames : one) {
          Result<std::string> uri = media.resolve(ref);
          if (!uri.ok()) {
            out.failure = fetch_failure(ctx, item, uris.size(), uri.error());
            return out;
          }
          uris.push_back(std::move(uri).value());
        }
      }
    }
  }
  return out;
}

SampleFailure sample_failure(const Context& ctx, const Item& item, FailureStage stage,
                             const Error& e) {
  return failure(ctx, item, stage, e);
}

SampleFailure fetch_failure(const Context& ctx, const Item& item, std::size_t image,
                            const Error& e) {
  return failure(ctx, item, FailureStage::kFetch, Error(e).with_context("image " + std::to_string(image)));
}

SampleFailure decode_failure(const Context& ctx, const Item& item, std::size_t image,
                             const Error& e) {
  return failure(ctx, item, FailureStage::kDecode, Error(e).with_context("image " + std::to_string(image)));
}

Fetched read_and_fetch(const Context& ctx, const Item& item, std::stop_token stop) {
  std::vector<std::string> uris;
  Fetched out = read_stage(ctx, item, &uris);
  if (out.failure || uris.empty()) return out;
  StageTimer timer(ctx, kFetch);
  obs::Span span(ctx.trace_for(item), "fetch", "images", static_cast<std::int64_t>(uris.size()));
  Result<SampleLease> lease = SampleLease::acquire(*ctx.budget, uris.size(), stop);
  if (!lease.ok()) {
    out.failure = fetch_failure(ctx, item, 0, lease.error());
    return out;
  }
  out.lease = std::move(lease).value();
  out.media.resize(uris.size());
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (ctx.io_delay_hook) ctx.io_delay_hook(item.sample, static_cast<int>(i));
    Result<std::vector<std::uint8_t>> bytes = ctx.fetcher->fetch(uris[i]);
    if (!bytes.ok()) {
      out.media.clear();
      out.lease.reset();
      out.failure = fetch_failure(ctx, item, i, bytes.error());
      return out;
    }
    out.lease.arrived(static_cast<std::int64_t>(bytes->size()));
    out.media[i] = std::move(bytes).value();
  }
  return out;
}

namespace {

video::VideoOptions video_options(const dataset::VideoParams& p) {
  video::VideoOptions o;
  o.fps = p.fps;
  o.nframes = p.nframes;
  o.min_frames = p.min_frames;
  o.max_frames = p.max_frames;
  o.video_start = p.video_start;
  o.video_end = p.video_end;
  o.min_pixels = p.min_pixels;
  o.max_pixels = p.max_pixels;
  o.total_pixels = p.total_pixels;
  o.sample_fps = p.sample_fps;
  o.raw_fps = p.raw_fps;
  return o;
}

// qwen-vl-utils fetch_image's size for one frame of a frame-list video: smart_resize with the
// element's min/max_pixels or the image defaults (4·f², 16384·f²).
Result<video::FrameSize> frame_image_size(const Context& ctx, const video::VideoOptions& o,
                                          std::span<const std::uint8_t> bytes) {
  STOKER_ASSIGN_OR_RETURN(image::ImageHeader h, image::probe_image(bytes));
  const double f = ctx.video_processor->config().factor();
  return video::qwen_smart_resize(h.height, h.width, static_cast<int>(f),
                                  o.min_pixels.value_or(4 * f * f),
                                  o.max_pixels.value_or(16384 * f * f));
}

Status plan_video(const Context& ctx, const dataset::VideoParams& params, Prepared::Video* v) {
  if (!ctx.video_processor) return failed_precondition("no video processor configured");
  const video::VideoProcessor& vp = *ctx.video_processor;
  const video::VideoOptions o = video_options(params);
  if (!v->frame_list) {
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(v->encoded[0], vp.config().limits));
    STOKER_ASSIGN_OR_RETURN(v->plan, vp.plan(*reader, o));
    return {};
  }
  for (std::size_t k = 0; k < v->encoded.size(); ++k) {
    Result<video::FrameSize> size = frame_image_size(ctx, o, v->encoded[k]);
    if (!size.ok()) return Error(size.error()).with_context("frame " + std::to_string(k));
    if (k == 0) {
      v->frame_width = size->width;
      v->frame_height = size->height;
    } else if (size->width != v->frame_width || size->height != v->frame_height) {
      return invalid_argument("frame " + std::to_string(k) + " resizes to " +
                              std::to_string(size->width) + "x" + std::to_string(size->height) +
                              ", frame 0 to " + std::to_string(v->frame_width) + "x" +
                              std::to_string(v->frame_height) + " (frames must stack)");
    }
  }
  STOKER_ASSIGN_OR_RETURN(v->plan, vp.plan_frame_list(static_cast<int>(v->encoded.size()),
                                                      v->frame_width, v->frame_height, o));
  return {};
}

}  // namespace

Status process_video(const Context& ctx, const Prepared::Video& v, video::VideoDType dtype,
                     void* dst) {
  const video::VideoProcessor& vp = *ctx.video_processor;
  if (!v.frame_list) {
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(v.encoded[0], vp.config().limits));
    return vp.process(*reader, v.plan, dtype, dst);
  }
  video::VideoFrames frames;  // a frame list's frames are images already in memory
  video::VideoFrames* out = &frames;
  out->width = v.plan.frames.width;
  out->height = v.plan.frames.height;
  const std::size_t frame_bytes = static_cast<std::size_t>(out->width) * out->height * 3;
  out->pixels.resize(frame_bytes * v.plan.stream_positions.size());
  image::RgbImage decoded, sized;
  video::ResizeScratch scratch;
  std::int64_t done = -1;
  for (std::size_t k = 0; k < v.plan.stream_positions.size(); ++k) {
    const std::int64_t i = v.plan.stream_positions[k];
    std::uint8_t* frame = out->pixels.data() + k * frame_bytes;
    if (i == done) {  // the padding frame repeats the last one
      std::memcpy(frame, frame - frame_bytes, frame_bytes);
      continue;
    }
    Status st = image::decode_rgb(v.encoded[static_cast<std::size_t>(i)], {}, &decoded);
    if (!st.ok()) return Error(st.error()).with_context("frame " + std::to_string(i));
    image::resize_bicubic_exact(decoded, v.frame_width, v.frame_height, &sized);
    video::resize_bicubic_torch(sized.pixels.data(), sized.width, sized.height,
                                static_cast<std::size_t>(sized.width) * 3, out->width,
                                out->height, frame, &scratch);
    done = i;
  }
  vp.patchify(frames, v.plan, dtype, dst);
  return {};
}

Prepared prepare(const Context& ctx, Fetched&& in) {
  StageTimer timer(ctx, kPrepare);
  obs::Tracer* trace = ctx.trace_for(in.item);
  obs::Span span(trace, "prepare", "sample", static_cast<std::int64_t>(in.item.sample));
  Prepared out;
  out.item = in.item;
  if (in.failure) {
    out.failure = std::move(in.failure);
    return out;
  }
  const image::ImageProcessor& proc = *ctx.processor;
  std::vector<text::VisionGrid> grids, video_grids;
  std::vector<double> seconds;
  std::size_t next = 0;  // into in.media, in part order (read_stage)
  {
    obs::Span plan_span(trace, "plan", "media", static_cast<std::int64_t>(in.media.size()));
    for (const dataset::Message& m : in.conversation.messages) {
      for (const dataset::Part& part : m.parts) {
        if (part.kind == dataset::Part::Kind::kImage) {
          const std::size_t i = out.plans.size();
          Result<image::ImagePlan> plan = proc.plan(in.media[next]);
          if (!plan.ok()) {
            out.failure = failure(ctx, in.item, FailureStage::kDecode,
                                  Error(plan.error()).with_context("image " + std::to_string(i)));
            return out;
          }
          out.plans.push_back(*plan);
          out.encoded.push_back(std::move(in.media[next++]));
          grids.push_back({plan->grid_t, plan->grid_h, plan->grid_w, {}});
        } else if (part.kind == dataset::Part::Kind::kVideo) {
          const std::size_t v = out.videos.size();
          const std::size_t n = part.frames.empty() ? 1 : part.frames.size();
          Prepared::Video video;
          for (std::size_t k = 0; k < n; ++k) video.encoded.push_back(std::move(in.media[next++]));
          video.frame_list = !part.frames.empty();
          Status st = plan_video(ctx, part.video, &video);
          if (!st.ok()) {
            out.failure = failure(ctx, in.item, FailureStage::kDecode,
                                  Error(st.error()).with_context("video " + std::to_string(v)));
            return out;
          }
          const video::VideoPlan& vp = video.plan;
          video_grids.push_back({vp.grid_t, vp.grid_h, vp.grid_w, vp.group_seconds});
          seconds.push_back(vp.second_per_grid_t);
          out.videos.push_back(std::move(video));
        }
      }
    }
  }
  text::SampleOptions options;
  options.merge_size = ctx.model.image.merge_size;
  options.max_length = ctx.max_length;
  options.overflow = ctx.truncate ? text::Overflow::kTruncateTurns : text::Overflow::kDrop;
  std::optional<obs::Span> tokenize_span(std::in_place, trace, "tokenize");
  Result<text::TokenizedSample> tokens = text::build_sample(
      in.conversation, ctx.template_kind, {}, *ctx.tokenizer, grids, video_grids, options);
  tokenize_span.reset();
  if (!tokens.ok()) {
    out.failure = failure(ctx, in.item, FailureStage::kTokenize, tokens.error());
    return out;
  }
  out.tokens = std::move(tokens).value();
  std::optional<obs::Span> rope_span(std::in_place, trace, "rope");
  Result<batch::RopeIndex> rope =
      batch::get_rope_index(out.tokens, grids, video_grids, ctx.rope, seconds);
  rope_span.reset();
  if (!rope.ok()) {
    out.failure = failure(ctx, in.item, FailureStage::kRope, rope.error());
    return out;
  }
  out.positions = std::move(rope->positions);
  // The media the sample keeps (all of them under the drop policy; a prefix after truncation)
  // wait as encoded bytes; the fetch budget is returned now (the window bounds how many wait).
  out.plans.resize(static_cast<std::size_t>(out.tokens.num_images));
  out.encoded.resize(out.plans.size());
  for (const image::ImagePlan& plan : out.plans) out.pixel_rows += plan.rows();
  out.videos.resize(static_cast<std::size_t>(out.tokens.num_videos));
  for (const Prepared::Video& v : out.videos) out.video_rows += v.plan.rows();
  in.media.clear();
  in.lease.reset();
  return out;
}

}  // namespace stoker::pipeline
