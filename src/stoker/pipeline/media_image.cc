// The image kind: a record's image part, one fetch; planned from its header (EXIF orientation,
// smart_resize: ImageProcessor::plan), produced by ImageProcessor::process — decode, resize,
// normalise, patchify straight into its pixel_values rows (the fused streaming path for JPEG).
// Uint8 wire form: the resized RGB image (whole-image decode + exact bicubic), finished by
// ImageProcessor::normalize_patchify on the receiver (bit-identical). Finishing on the device
// (kUInt8): the same fused path writes the resized image itself into the batch ([H, W, 3] over
// the image's rows × 3·P·P bytes; process and normalize_patchify take kUInt8), and the batch
// carries the value table of the kernel; stoker.finish patchifies on the device.
#include <algorithm>
#include <cstring>

#include "stoker/base/clock.h"
#include "stoker/image/resample.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/media.h"

namespace stoker::pipeline {
namespace {

const Modality kImages = {
    .name = "image",
    .rows_tensor = "pixel_values",
    .meta = {{"image_grid_thw", batch::DType::kInt64, 3}},
    .always = true,
    .columns = [](const MediaEnv& env) {
      return env.image != nullptr ? env.image->columns() : std::int64_t{0};
    },
    .uint8_tensor = "pixel_values_uint8",
    .table_tensor = "pixel_values_lut",
    .patching_tensor = "pixel_values_patching",
    .uint8_row = [](const MediaEnv& env) {
      const std::int64_t p = env.image != nullptr ? env.image->config().patch_size : 0;
      return std::vector<std::int64_t>{3 * p * p};
    },
    .tables = [](const MediaEnv& env, image::PixelDType dtype, void* table, std::int64_t* patching) {
      if (env.image == nullptr) {
        std::memset(table, 0, 3 * 256 * (dtype == image::PixelDType::kFloat32 ? 4 : 2));
        std::fill(patching, patching + 4, std::int64_t{1});
        return;
      }
      env.image->value_table(dtype, table);
      const image::ImageProcessorConfig& c = env.image->config();
      // A still image stores one frame, finished as T identical ones.
      const std::int64_t v[4] = {c.patch_size, c.merge_size, c.temporal_patch_size, 1};
      std::copy(v, v + 4, patching);
    },
};

// One image's emit span, and inside it the decode, resize and normalise phases. The fused path
// interleaves them band by band: the children are their summed times laid end to end (so they
// nest and add up), not the moments each ran.
void trace_image(obs::Tracer* trace, std::int64_t t0, std::int64_t t1,
                 const image::PhaseTimes& p, std::int64_t sample) {
  trace->span("emit", t0, t1, "sample", sample);
  std::int64_t at = t0;
  const std::pair<const char*, std::int64_t> phases[] = {
      {"decode", p.decode_ns}, {"resize", p.resize_ns}, {"normalise", p.normalise_ns}};
  for (const auto& [name, ns] : phases) {
    const std::int64_t end = std::min(t1, at + ns);
    trace->span(name, at, end);
    at = end;
  }
}

class ImageMedium final : public Medium {
 public:
  ImageMedium(const image::ImagePlan& plan, std::vector<std::uint8_t> bytes)
      : plan_(plan), bytes_(std::move(bytes)) {}

  const MediaKind& kind() const override;
  std::int64_t rows() const override { return plan_.rows(); }
  text::VisionGrid grid() const override { return {plan_.grid_t, plan_.grid_h, plan_.grid_w, {}}; }
  std::uint64_t held_bytes() const override { return bytes_.size(); }

  Status produce(const MediaEnv& env, image::PixelDType dtype, std::uint8_t* dst,
                 const EmitTrace& trace) const override {
    thread_local image::ImageScratch scratch;  // per thread: steady state allocates nothing
    if (trace.tracer == nullptr) return env.image->process(bytes_, plan_, dtype, dst, &scratch);
    image::PhaseTimes phases;
    scratch.phases = &phases;
    const std::int64_t t0 = now_ns();
    Status st = env.image->process(bytes_, plan_, dtype, dst, &scratch);
    const std::int64_t t1 = now_ns();
    scratch.phases = nullptr;
    trace_image(trace.tracer, t0, t1, phases, trace.sample);
    return st;
  }

  void write_meta(std::span<std::uint8_t* const> meta) const override {
    const std::int64_t g[3] = {plan_.grid_t, plan_.grid_h, plan_.grid_w};
    std::copy(g, g + 3, reinterpret_cast<std::int64_t*>(meta[0]));
  }

  void save(ByteWriter& w, bool with_bytes) const override {
    for (int v : {plan_.src_width, plan_.src_height, plan_.width, plan_.height, plan_.grid_t,
                  plan_.grid_h, plan_.grid_w, plan_.orientation}) {
      w.put<std::int32_t>(v);
    }
    w.vec(with_bytes ? bytes_ : std::vector<std::uint8_t>());
  }

  Status fits(const MediaEnv& env) const override {
    if (env.image == nullptr) return failed_precondition("this model takes no images");
    return env.image->check_plan(plan_);
  }

  std::uint64_t resized_bytes() const override {
    return static_cast<std::uint64_t>(plan_.width) * plan_.height * 3;
  }

  Status resize(const MediaEnv& env, std::uint8_t* dst) const override {
    thread_local image::ImageScratch scratch;
    STOKER_RETURN_IF_ERROR(env.image->decode(bytes_, plan_, &scratch.decoded, &scratch.stored));
    image::resize_bicubic_exact(scratch.decoded, plan_.width, plan_.height, &scratch.resized);
    std::copy(scratch.resized.pixels.begin(),
              scratch.resized.pixels.begin() + static_cast<std::ptrdiff_t>(resized_bytes()), dst);
    return {};
  }

  void finish(const MediaEnv& env, const std::uint8_t* resized, image::PixelDType dtype,
              std::uint8_t* dst) const override {
    env.image->normalize_patchify(resized, plan_, dtype, dst);
  }

 private:
  image::ImagePlan plan_;
  std::vector<std::uint8_t> bytes_;
};

class ImageKind final : public MediaKind {
 public:
  std::string_view name() const override { return "image"; }
  const Modality& modality() const override { return kImages; }
  bool takes(const dataset::Part& part) const override {
    return part.kind == dataset::Part::Kind::kImage;
  }
  std::vector<std::string_view> refs(const dataset::Part& part) const override {
    return {part.value};
  }
  Result<std::unique_ptr<Medium>> plan(const MediaEnv& env, const dataset::Part&,
                                       std::vector<std::vector<std::uint8_t>> bytes) const override {
    if (env.image == nullptr) return failed_precondition("this model takes no images");
    STOKER_ASSIGN_OR_RETURN(image::ImagePlan plan, env.image->plan(bytes[0]));
    return std::unique_ptr<Medium>(new ImageMedium(plan, std::move(bytes[0])));
  }
  Result<std::unique_ptr<Medium>> load(ByteReader& r) const override {
    std::int32_t v[8];
    for (std::int32_t& x : v) {
      if (!r.get(&x)) return data_loss("image plan");
    }
    image::ImagePlan p;
    p.src_width = v[0];
    p.src_height = v[1];
    p.width = v[2];
    p.height = v[3];
    p.grid_t = v[4];
    p.grid_h = v[5];
    p.grid_w = v[6];
    p.orientation = v[7];
    std::vector<std::uint8_t> bytes;
    // Sizes a receiver allocates from: bounded (16k sides, like the decoders' limits).
    if (!r.vec(&bytes) || p.width <= 0 || p.height <= 0 || p.width > 65536 || p.height > 65536 ||
        p.grid_t <= 0 || p.grid_h <= 0 || p.grid_w <= 0 || p.rows() > (std::int64_t{1} << 24)) {
      return data_loss("image plan");
    }
    return std::unique_ptr<Medium>(new ImageMedium(p, std::move(bytes)));
  }
};

const ImageKind kImageKind;

const MediaKind& ImageMedium::kind() const { return kImageKind; }

}  // namespace

const MediaKind& image_kind() { return kImageKind; }

}  // namespace stoker::pipeline
