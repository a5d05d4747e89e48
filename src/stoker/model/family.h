// The model-family seam: everything model-specific the engine needs, behind one interface. A
// Family (a registry entry: "qwen2_5_vl") says which model specs are its own — a preset name or
// a Hugging Face model folder — and opens one as a Model, which supplies the processors (image,
// video), the template renderer and the media placeholders (text/labels.h), the position rule
// and its tensor schema (how many rows a sample's positions have: 3 for mRoPE, 1), and the
// special ids (the pad id). The engine (pipeline/, cluster/) asks only this interface; a family's
// constants live in its own files (Qwen-VL: model_config.*, chat_template_source.*,
// qwen_vl_family.cc, text/qwen_vl.*, text/chat_template.*). A new family registers itself
// (register_family) from its own files — the test family in model/testing/ does, from a test.
// Families and models are immutable and thread-safe once made.
// Errors of open_model: NotFound (no family claims the spec), the family's own (InvalidArgument
// for a bad folder or a refused chat template, NotFound for missing tokenizer files).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/batch/mrope.h"
#include "stoker/image/processor.h"
#include "stoker/text/labels.h"
#include "stoker/text/tokenizer.h"

namespace stoker::video {
class VideoProcessor;
}
namespace stoker::audio {
class AudioProcessor;
}

namespace stoker::model {

struct ModelConfig;  // model_config.h

// The model a spec names when none is given (LoaderConfig::model, tools).
inline constexpr std::string_view kDefaultModel = "qwen2.5-vl";

// What a sample's media give its template and its positions: one grid per image and per video
// (in order), and each video's seconds per temporal grid step.
struct SampleMedia {
  std::span<const text::VisionGrid> images, videos;
  std::span<const double> video_seconds;
  // Audio clips (in order): their grids carry the token counts; audio_frames: each clip's
  // feature_attention_mask sum (TMRoPE's audio_seqlens). Empty for models without audio.
  std::span<const text::VisionGrid> audios;
  std::span<const std::int64_t> audio_frames;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view family() const = 0;   // the family's name
  // The processors (null: the model takes no such media; a record with one fails it).
  virtual const image::ImageProcessor* image_processor() const = 0;
  virtual const video::VideoProcessor* video_processor() const = 0;
  // Audio (Qwen2-Audio, the Omni models): the feature rules and bounds; null: no audio.
  virtual const audio::AudioProcessor* audio_processor() const { return nullptr; }
  virtual const text::Tokenizer& tokenizer() const = 0;
  // Template renderer and media placeholders (text::build_sample).
  virtual const text::ChatRenderer& renderer() const = 0;
  virtual const text::MediaPlaceholders& placeholders() const = 0;
  // The position rule and its tensor schema: position_rows() rows × the sample's length
  // (row-major), for the ids the expansion made. Doubles hold the values exactly: whole numbers
  // for int64 position_ids, float32 values where float_positions() (Qwen3-Omni's TMRoPE:
  // transformers keeps a video's time index t·second_per_grid·13 as a float32).
  virtual int position_rows() const = 0;
  virtual Result<std::vector<double>> positions(const text::TokenizedSample& sample,
                                                const SampleMedia& media) const = 0;
  // position_ids float32 instead of int64 (transformers' dtype for the model).
  virtual bool float_positions() const { return false; }
  // Special ids: what pads a batch's rows (and Megatron's alignment gaps).
  virtual std::int64_t pad_id() const = 0;
  // What decides a sample's tokens and positions besides its record, as text: equal for two
  // models that make the same samples from the same records. A state's order fingerprint hashes
  // it (pipeline/fingerprint.h, the "model" field): a resume under a model that counts tokens
  // otherwise would repeat and skip samples. The default: the family, the processors' settings
  // that decide grids (patch, merge, pixel bounds, resizing, EXIF, small-image rule), the
  // vocabulary size, the position rows and the pad id; a family adds its own (Qwen-VL: the
  // vision token ids, tokens per second, the chat template).
  virtual std::string fingerprint() const;
};

// What a caller may choose about a model it opens.
struct ModelOptions {
  std::string tokenizer;  // folder with tokenizer.json; empty: the family's default for the spec
  bool apply_exif_orientation = true;  // image/processor.h
  image::SmartResizeRules small_images = image::SmartResizeRules::kCurrent;
  // A choice within a family's position rule: Qwen2.5-VL's video time index (batch/mrope.h,
  // TemporalRule::kSeconds: float32 product then truncated, or seconds per grid cast to an
  // integer first). Families whose rule has no such choice ignore it.
  batch::TimeIndexMode video_time_index = batch::TimeIndexMode::kFloatThenTruncate;
  // The spec as the family's load_config parsed it (the option schema does it once per run and
  // every Loader of the run shares it); null: the family reads the spec itself.
  std::shared_ptr<const ModelConfig> parsed;
  // The chat template: a named one of the model folder's (empty: transformers' default choice),
  // and template kwargs for every record (a JSON object text; a record's own
  // "chat_template_kwargs" override them).
  std::string chat_template;
  std::string chat_template_kwargs;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string_view name() const = 0;
  // Whether `spec` (a preset name or a model folder) is a model of this family: cheap (a
  // folder's config.json, not its every file).
  virtual bool claims(const std::string& spec) const = 0;
  virtual Result<std::unique_ptr<Model>> open(const std::string& spec,
                                              const ModelOptions& options) const = 0;
  // `spec` parsed once, to be shared by every model opened from it (ModelOptions::parsed) and to
  // say which model folder's settings apply (ModelConfig::folder, its stoker.json): the Qwen-VL
  // families' ModelConfig (model_config.h). Null (the default): a family without one, whose
  // open() reads the spec itself.
  virtual Result<std::shared_ptr<const ModelConfig>> load_config(const std::string& spec) const {
    (void)spec;
    return std::shared_ptr<const ModelConfig>();
  }
  // Where `spec`'s tokenizer files are when none is given (a folder: itself; a preset: the
  // family's installed default). NotFound naming the remedy when they are not there.
  virtual Result<std::string> default_tokenizer_dir(const std::string& spec) const = 0;
  // Preset names, for messages ("qwen2-vl, qwen2.5-vl, qwen3-vl").
  virtual std::vector<std::string> presets() const { return {}; }
};

// The registry: the Qwen-VL families built in; a family registered later is asked first. Not
// thread-safe against concurrent lookups: register before the first Loader is made.
void register_family(const Family* family);
Result<const Family*> family_for(const std::string& spec);
Result<std::unique_ptr<Model>> open_model(const std::string& spec, const ModelOptions& options);
// family_for(spec)->load_config(spec): the spec parsed once for a run (ModelOptions::parsed).
Result<std::shared_ptr<const ModelConfig>> load_config(const std::string& spec);
// family_for(spec)->default_tokenizer_dir(spec).
Result<std::string> default_tokenizer_dir(const std::string& spec);

}  // namespace stoker::model
