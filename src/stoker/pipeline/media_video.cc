// The video kinds, over video/: a video file (one fetch; planned from its packet scan —
// VideoReader::open, no decoding — and the frame plan, video/sampling.h; produced by
// VideoProcessor::process, streaming one temporal group at a time into its rows) and a video
// given as a list of frame images (one fetch per frame; video/frame_list.h). Both write
// pixel_values_videos rows, a video_grid_thw row and second_per_grid_ts. Uint8 wire form: the
// resized frames (T × H × W × 3), patchified on the receiver (VideoProcessor::patchify).
// Finishing on the device (kUInt8): the resized frames themselves, [F, H, W, 3] over the
// video's rows × 3·T·P·P bytes (decoded and resized straight into the batch).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "stoker/pipeline/media.h"
#include "stoker/video/frame_list.h"
#include "stoker/video/processor.h"

namespace stoker::pipeline {
namespace {

const Modality kVideos = {
    .name = "video",
    .rows_tensor = "pixel_values_videos",
    .meta = {{"video_grid_thw", batch::DType::kInt64, 3},
             {"second_per_grid_ts", batch::DType::kFloat32, 0}},
    .always = false,
    .columns = [](const MediaEnv& env) {
      return env.video != nullptr ? env.video->columns() : std::int64_t{0};
    },
    .uint8_tensor = "pixel_values_videos_uint8",
    .table_tensor = "pixel_values_videos_lut",
    .patching_tensor = "pixel_values_videos_patching",
    .uint8_row = [](const MediaEnv& env) {
      if (env.video == nullptr) return std::vector<std::int64_t>{0};
      return std::vector<std::int64_t>{env.video->columns()};  // 3·T·P·P bytes a row
    },
    .tables = [](const MediaEnv& env, image::PixelDType dtype, void* table, std::int64_t* patching) {
      if (env.video == nullptr) {
        std::memset(table, 0, 3 * 256 * (dtype == image::PixelDType::kFloat32 ? 4 : 2));
        std::fill(patching, patching + 4, std::int64_t{1});
        return;
      }
      const video::VideoProcessorConfig& c = env.video->config();
      // Every frame of a temporal group is stored.
      const std::int64_t v[4] = {c.patch_size, c.merge_size, c.temporal_patch_size,
                                 c.temporal_patch_size};
      std::copy(v, v + 4, patching);
      env.video->value_table(dtype == image::PixelDType::kFloat32 ? video::VideoDType::kFloat32
                                                                  : video::VideoDType::kBFloat16,
                             table);
    },
};

video::VideoDType video_dtype(image::PixelDType d) {
  switch (d) {
    case image::PixelDType::kFloat32: return video::VideoDType::kFloat32;
    case image::PixelDType::kBFloat16: return video::VideoDType::kBFloat16;
    case image::PixelDType::kUInt8: return video::VideoDType::kUInt8;
  }
  return video::VideoDType::kFloat32;
}

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

// The plan on the wire. Untrusted on load: counts and sizes bounded before anything is sized
// from them.
void save_plan(ByteWriter& w, const video::VideoPlan& p) {
  w.put(p.frames.total_frames);
  w.put(p.frames.video_fps);
  w.vec(p.frames.indices);
  w.put(p.frames.sample_fps);
  for (int v : {p.frames.width, p.frames.height, p.src_width, p.src_height, p.grid_t, p.grid_h,
                p.grid_w}) {
    w.put<std::int32_t>(v);
  }
  w.vec(p.stream_positions);
  w.put(p.second_per_grid_t);
  w.vec(p.group_seconds);
}

bool load_plan(ByteReader& r, video::VideoPlan* p) {
  std::int32_t v[7];
  if (!(r.get(&p->frames.total_frames) && r.get(&p->frames.video_fps) &&
        r.vec(&p->frames.indices) && r.get(&p->frames.sample_fps))) {
    return false;
  }
  for (std::int32_t& x : v) {
    if (!r.get(&x)) return false;
  }
  p->frames.width = v[0];
  p->frames.height = v[1];
  p->src_width = v[2];
  p->src_height = v[3];
  p->grid_t = v[4];
  p->grid_h = v[5];
  p->grid_w = v[6];
  if (!(r.vec(&p->stream_positions) && r.get(&p->second_per_grid_t) && r.vec(&p->group_seconds))) {
    return false;
  }
  const std::int64_t frames = static_cast<std::int64_t>(p->stream_positions.size());
  return p->frames.width > 0 && p->frames.height > 0 && p->frames.width <= 16384 &&
         p->frames.height <= 16384 && p->grid_t > 0 && p->grid_h > 0 && p->grid_w > 0 &&
         frames > 0 && frames <= (1 << 16) && p->rows() <= (std::int64_t{1} << 26) &&
         std::isfinite(p->second_per_grid_t);
}

// What both video kinds share: the plan, its grid and seconds, the meta rows.
class VideoMedium : public Medium {
 public:
  std::int64_t rows() const override { return plan().rows(); }
  text::VisionGrid grid() const override {
    const video::VideoPlan& p = plan();
    return {p.grid_t, p.grid_h, p.grid_w, p.group_seconds};
  }
  double second_per_grid() const override { return plan().second_per_grid_t; }
  // Decoding dominates: every kept frame is decoded and resized from its source size.
  std::int64_t cost() const override {
    return static_cast<std::int64_t>(plan().frames.indices.size()) * (1 << 20);
  }
  void write_meta(std::span<std::uint8_t* const> meta) const override {
    const video::VideoPlan& p = plan();
    const std::int64_t g[3] = {p.grid_t, p.grid_h, p.grid_w};
    std::copy(g, g + 3, reinterpret_cast<std::int64_t*>(meta[0]));
    *reinterpret_cast<float*>(meta[1]) = static_cast<float>(p.second_per_grid_t);
  }
  Status fits(const MediaEnv& env) const override {
    if (env.video == nullptr) return failed_precondition("this model takes no videos");
    return env.video->check_plan(plan());
  }
  std::uint64_t resized_bytes() const override {
    const video::VideoPlan& p = plan();
    return p.stream_positions.size() * static_cast<std::uint64_t>(p.frames.width) *
           p.frames.height * 3;
  }
  void finish(const MediaEnv& env, const std::uint8_t* resized, image::PixelDType dtype,
              std::uint8_t* dst) const override {
    const video::VideoPlan& p = plan();
    env.video->patchify(resized, static_cast<std::int64_t>(p.stream_positions.size()), p,
                        video_dtype(dtype), dst);
  }

 protected:
  virtual const video::VideoPlan& plan() const = 0;
};

class VideoFileMedium final : public VideoMedium {
 public:
  VideoFileMedium(video::VideoPlan plan, std::vector<std::uint8_t> bytes)
      : plan_(std::move(plan)), bytes_(std::move(bytes)) {}
  const MediaKind& kind() const override;
  std::uint64_t held_bytes() const override { return bytes_.size(); }
  Status produce(const MediaEnv& env, image::PixelDType dtype, std::uint8_t* dst,
                 const EmitTrace&) const override {
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(bytes_, env.video->config().limits));
    return env.video->process(*reader, plan_, video_dtype(dtype), dst);
  }
  Status resize(const MediaEnv& env, std::uint8_t* dst) const override {
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(bytes_, env.video->config().limits));
    return env.video->read_frames(*reader, plan_, dst);
  }
  void save(ByteWriter& w, bool with_bytes) const override {
    save_plan(w, plan_);
    w.vec(with_bytes ? bytes_ : std::vector<std::uint8_t>());
  }

 private:
  const video::VideoPlan& plan() const override { return plan_; }
  video::VideoPlan plan_;
  std::vector<std::uint8_t> bytes_;
};

class FrameListMedium final : public VideoMedium {
 public:
  FrameListMedium(video::FrameListPlan plan, std::vector<std::vector<std::uint8_t>> frames)
      : plan_(std::move(plan)), frames_(std::move(frames)) {}
  const MediaKind& kind() const override;
  std::uint64_t held_bytes() const override {
    std::uint64_t n = 0;
    for (const auto& f : frames_) n += f.size();
    return n;
  }
  Status produce(const MediaEnv& env, image::PixelDType dtype, std::uint8_t* dst,
                 const EmitTrace&) const override {
    return video::process_frame_list(*env.video, plan_, frames_, video_dtype(dtype), dst);
  }
  Status resize(const MediaEnv&, std::uint8_t* dst) const override {
    return video::read_frame_list(plan_, frames_, dst);
  }
  void save(ByteWriter& w, bool with_bytes) const override {
    save_plan(w, plan_.plan);
    w.put<std::int32_t>(plan_.frame_width);
    w.put<std::int32_t>(plan_.frame_height);
    w.put<std::uint64_t>(with_bytes ? frames_.size() : 0);
    if (with_bytes) {
      for (const auto& f : frames_) w.vec(f);
    }
  }

 private:
  const video::VideoPlan& plan() const override { return plan_.plan; }
  video::FrameListPlan plan_;
  std::vector<std::vector<std::uint8_t>> frames_;
};

class VideoFileKind final : public MediaKind {
 public:
  std::string_view name() const override { return "video file"; }
  const Modality& modality() const override { return kVideos; }
  bool takes(const dataset::Part& part) const override {
    return part.kind == dataset::Part::Kind::kVideo && part.frames.empty();
  }
  std::vector<std::string_view> refs(const dataset::Part& part) const override {
    return {part.value};
  }
  Result<std::unique_ptr<Medium>> plan(const MediaEnv& env, const dataset::Part& part,
                                       std::vector<std::vector<std::uint8_t>> bytes) const override {
    if (env.video == nullptr) return failed_precondition("this model takes no videos");
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(bytes[0], env.video->config().limits));
    STOKER_ASSIGN_OR_RETURN(video::VideoPlan plan, env.video->plan(*reader, video_options(part.video)));
    return std::unique_ptr<Medium>(new VideoFileMedium(std::move(plan), std::move(bytes[0])));
  }
  Result<std::unique_ptr<Medium>> load(ByteReader& r) const override {
    video::VideoPlan plan;
    std::vector<std::uint8_t> bytes;
    if (!load_plan(r, &plan) || !r.vec(&bytes)) return data_loss("video plan");
    return std::unique_ptr<Medium>(new VideoFileMedium(std::move(plan), std::move(bytes)));
  }
};

class FrameListKind final : public MediaKind {
 public:
  std::string_view name() const override { return "video frames"; }
  const Modality& modality() const override { return kVideos; }
  bool takes(const dataset::Part& part) const override {
    return part.kind == dataset::Part::Kind::kVideo && !part.frames.empty();
  }
  std::vector<std::string_view> refs(const dataset::Part& part) const override {
    return {part.frames.begin(), part.frames.end()};
  }
  Result<std::unique_ptr<Medium>> plan(const MediaEnv& env, const dataset::Part& part,
                                       std::vector<std::vector<std::uint8_t>> bytes) const override {
    if (env.video == nullptr) return failed_precondition("this model takes no videos");
    STOKER_ASSIGN_OR_RETURN(video::FrameListPlan plan,
                            video::plan_frame_list(*env.video, video_options(part.video), bytes));
    return std::unique_ptr<Medium>(new FrameListMedium(std::move(plan), std::move(bytes)));
  }
  Result<std::unique_ptr<Medium>> load(ByteReader& r) const override {
    video::FrameListPlan plan;
    std::int32_t w = 0, h = 0;
    std::uint64_t n = 0;
    if (!load_plan(r, &plan.plan) || !r.get(&w) || !r.get(&h) || !r.get(&n) || n > (1 << 16)) {
      return data_loss("frame-list plan");
    }
    plan.frame_width = w;
    plan.frame_height = h;
    std::vector<std::vector<std::uint8_t>> frames(static_cast<std::size_t>(n));
    for (auto& f : frames) {
      if (!r.vec(&f)) return data_loss("frame-list frames");
    }
    // With its frames (the encoded wire) every planned position must name one of them.
    for (std::int64_t i : plan.plan.stream_positions) {
      if (n > 0 && (i < 0 || static_cast<std::uint64_t>(i) >= n)) return data_loss("frame-list plan");
    }
    return std::unique_ptr<Medium>(new FrameListMedium(std::move(plan), std::move(frames)));
  }
};

const VideoFileKind kVideoFileKind;
const FrameListKind kFrameListKind;

const MediaKind& VideoFileMedium::kind() const { return kVideoFileKind; }
const MediaKind& FrameListMedium::kind() const { return kFrameListKind; }

}  // namespace

const MediaKind& video_file_kind() { return kVideoFileKind; }
const MediaKind& frame_list_kind() { return kFrameListKind; }

}  // namespace stoker::pipeline
