// Per-model rules (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) read from a Hugging Face model folder or a
// built-in preset. A model spec is either a folder path (config.json, preprocessor_config.json,
// tokenizer files) or a preset name: "qwen2-vl", "qwen2.5-vl", "qwen3-vl".
// preprocessor_config.json: legacy `min_pixels`/`max_pixels` win over `size.shortest_edge` /
// `size.longest_edge` (pixel counts); `size` must then hold both (spec §1.2, §6.1).
// Immutable value; thread-safe. Errors: NotFound (folder/file), InvalidArgument (bad JSON/field).
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/image/processor.h"

namespace stoker::model {

enum class ModelFamily { kQwen2VL, kQwen25VL, kQwen3VL };
std::string_view family_name(ModelFamily f);  // "qwen2_vl", "qwen2_5_vl", "qwen3_vl"

struct ModelConfig {
  ModelFamily family = ModelFamily::kQwen25VL;
  std::string name;         // preset name or folder path
  std::string folder;       // empty for a preset without files
  image::ImageProcessorConfig image;
  // Token ids from config.json (defaults: spec §6.4).
  int image_token_id = 151655;
  int video_token_id = 151656;
  int vision_start_token_id = 151652;
  int vision_end_token_id = 151653;
  // Qwen2.5-VL vision_config.tokens_per_second (hub value 2).
  int tokens_per_second = 2;
};

// Built-in presets with the hub's preprocessor values (spec §1.2).
Result<ModelConfig> preset(std::string_view name);
// A folder (reads config.json for model_type when present, preprocessor_config.json for the
// image processor) or a preset name.
Result<ModelConfig> load_model(const std::string& spec);
// Where the tokenizer files of `model` are: its folder, or for a preset (which has no files) the
// Qwen tokenizer the repository's pinned npm oracles ship (tools/oracles). NotFound, naming the
// path and the remedy, when neither exists.
Result<std::string> default_tokenizer_dir(const ModelConfig& model);
// Parses a preprocessor_config.json text into `config` (fields absent keep their values).
Status parse_preprocessor_config(std::string_view json_text, image::ImageProcessorConfig* config);

}  // namespace stoker::model
