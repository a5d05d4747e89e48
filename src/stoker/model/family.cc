#include "stoker/model/family.h"

#include "stoker/audio/processor.h"
#include "stoker/video/processor.h"

namespace stoker::model {

std::vector<const Family*> qwen_vl_families();    // qwen_vl_family.cc
std::vector<const Family*> qwen_omni_families();  // qwen_omni_family.cc

namespace {

std::vector<const Family*>& registry() {
  static std::vector<const Family*> families = [] {
    std::vector<const Family*> f = qwen_vl_families();
    for (const Family* o : qwen_omni_families()) f.push_back(o);
    return f;
  }();
  return families;
}

}  // namespace

std::string Model::fingerprint() const {
  std::string out = "family=" + std::string(family());
  auto add = [&](const char* name, std::int64_t v) {
    out += std::string("\n") + name + "=" + std::to_string(v);
  };
  if (const image::ImageProcessor* p = image_processor(); p != nullptr) {
    const image::ImageProcessorConfig& c = p->config();
    add("image.patch", c.patch_size);
    add("image.temporal_patch", c.temporal_patch_size);
    add("image.merge", c.merge_size);
    add("image.min_pixels", c.min_pixels);
    add("image.max_pixels", c.max_pixels);
    add("image.resize", c.do_resize);
    add("image.exif", c.apply_exif_orientation);
    add("image.small_images", static_cast<std::int64_t>(c.resize_rules));
  }
  if (const video::VideoProcessor* p = video_processor(); p != nullptr) {
    const video::VideoProcessorConfig& c = p->config();
    add("video.patch", c.patch_size);
    add("video.temporal_patch", c.temporal_patch_size);
    add("video.merge", c.merge_size);
  }
  if (const audio::AudioProcessor* p = audio_processor(); p != nullptr) {
    out += std::string("\naudio.model=") + audio::audio_model_name(p->model());
    add("audio.mels", p->n_mels());
  }
  add("vocab", static_cast<std::int64_t>(tokenizer().vocab_size()));
  add("position_rows", position_rows());
  if (float_positions()) out += "\nposition_dtype=float32";
  add("pad", pad_id());
  return out;
}

void register_family(const Family* family) { registry().push_back(family); }

Result<const Family*> family_for(const std::string& spec) {
  const auto& families = registry();
  for (auto it = families.rbegin(); it != families.rend(); ++it) {
    if ((*it)->claims(spec)) return *it;
  }
  std::string presets;
  for (const Family* f : families) {
    for (const std::string& p : f->presets()) presets += (presets.empty() ? "" : ", ") + p;
  }
  return not_found("'" + spec + "' is neither a model folder nor a preset (" + presets + ")");
}

Result<std::unique_ptr<Model>> open_model(const std::string& spec, const ModelOptions& options) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->open(spec, options);
}

Result<std::shared_ptr<const ModelConfig>> load_config(const std::string& spec) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->load_config(spec);
}

Result<std::string> default_tokenizer_dir(const std::string& spec) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->default_tokenizer_dir(spec);
}

}  // namespace stoker::model
