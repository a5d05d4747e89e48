// `stoker inspect`: reads a JSONL dataset, runs every image through the model's image processor
// stage by stage, and prints what a user wants to know before training on it: per image the
// format, source and resized size, grid and vision tokens and the time of each stage; then a
// summary. Bad records and images are reported with file:line and the reason; the run goes on.
// A model of an audio family (Qwen2-Audio, Qwen2.5-Omni, Qwen3-Omni: opened through its family,
// model/family.h) also has its audio clips inspected (inspect_audio.h); a model without an image
// processor (Qwen2-Audio) fails each image with the reason.
// Records and media come through the engine's own sources (pipeline::open_sources): the same
// manifest index, trust boundary, store and caps as `stoker run`, local or remote.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/base/elide.h"
#include "stoker/base/printable.h"
#include "stoker/base/redact.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/inspect_audio.h"
#include "stoker/cli/inspect_format.h"
#include "stoker/cli/options_cli.h"
#include "stoker/dataset/conversation.h"
#include "stoker/image/processor.h"
#include "stoker/image/resample.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/store_fetcher.h"
#include "stoker/base/json_text.h"

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: stoker inspect DATA.jsonl [options]

For every record of DATA.jsonl (OpenAI messages, ShareGPT or LLaVA form) and every image in it:
the file, format and colour mode, source size, size after smart_resize, grid t x h x w, vision
tokens, and the time of each stage (decode, resize, normalise+patchify, total) on one core with
the model's exact (Pillow-compatible) image processor. Then a summary: images, vision tokens
(total, p50, max per image), time per image (p50, p99), images/s, errors; the summary names the
chat template the model would train with, or why it is refused.
With an audio model (--model qwen2-audio | qwen2.5-omni | a Qwen2-Audio, Qwen2.5-Omni or
Qwen3-Omni folder), also every audio clip (audio parts, and the track of a video with
use_audio_in_video): container and codec, sample rate and channels, its length at 16 kHz,
feature frames and audio tokens (as `stoker run` counts them), the time to decode+resample
(column decode) and to compute its Whisper log-mel features (column norm|feats); then an audio
summary (clips, tokens, time per clip, clips/s). Videos are not inspected.
Bad records (malformed JSON, no assistant turn, ...) and bad images (missing, corrupt,
truncated, too small, ...) are reported with file:line and the reason; the run continues.
Exit status: 0 when everything was fine, 1 when any record or image had an error, 2 on usage.
)";

struct ImageRow {
  int line = 0;
  std::string path;
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  image::ImageHeader header;
  image::ImagePlan plan;
  std::int64_t bytes = 0;
  double decode_s = 0, resize_s = 0, normalize_s = 0;
  double total_s() const { return decode_s + resize_s + normalize_s; }
};

struct RecordError {
  int line = 0;
  std::string id;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
};

std::string size_str(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

std::string format_str(const image::ImageHeader& h) {
  std::string s = std::string(image::format_name(h.format)) + " " + h.mode;
  if (h.progressive) s += " prog";
  if (h.format == image::ImageFormat::kPng && h.bit_depth != 8) s += " " + std::to_string(h.bit_depth) + "b";
  return s;
}

// What is inspected with: the model's name and template, its processors (null: the model takes
// no such media).
struct InspectModel {
  std::string name;
  std::string chat_template;  // model::describe_chat_template, or the renderer's description
  const image::ImageProcessor* image = nullptr;
  const audio::AudioProcessor* audio = nullptr;
};

class Inspector {
 public:
  // `sources`: the record source and the fetcher from pipeline::open_sources.
  Inspector(InspectModel model, const pipeline::Context& sources, bool json)
      : model_(std::move(model)), sources_(sources), json_(json) {}

  void record(std::uint64_t id) {
    const int line = static_cast<int>(sources_.records->origin(id).line);
    std::string text;
    if (Status st = sources_.records->read(id, text); !st.ok()) {
      ++records_;
      RecordError e{line, "", st.error().code(), st.error().to_string()};
      emit_record_error(e);
      record_errors_.push_back(std::move(e));
      return;
    }
    record(line, text, sources_.records->media(id));
  }

  void record(int line, std::string_view text, const dataset::MediaResolver& scope) {
    ++records_;
    auto conv = dataset::parse_record(text);
    Status valid = conv.ok() ? dataset::validate_for_sft(*conv) : Status(conv.error());
    if (!valid.ok()) {
      RecordError e{line, conv.ok() ? conv->id : "", valid.error().code(), valid.error().to_string()};
      emit_record_error(e);
      record_errors_.push_back(std::move(e));
      return;
    }
    for (const auto& m : conv->messages)
      for (const auto& p : m.parts) {
        if (p.kind == dataset::Part::Kind::kVideo) ++videos_skipped_;
        if (p.kind == dataset::Part::Kind::kAudio && model_.audio == nullptr) ++audios_skipped_;
        if (p.kind != dataset::Part::Kind::kImage) continue;
        ImageRow row = inspect_image(line, p.value, scope);
        emit_row(row);
        rows_.push_back(std::move(row));
      }
    // The record's audio clips after its images (one feature-extractor call per record).
    if (model_.audio == nullptr) return;
    for (AudioRow& r : inspect_record_audio(line, *conv, scope, *sources_.fetcher, *model_.audio)) {
      emit_audio_row(r, json_);
      audio_rows_.push_back(std::move(r));
    }
  }

  void print_header() const {
    if (json_) return;
    if (model_.audio != nullptr) {  // audio rows share the columns (inspect_audio.h)
      std::printf("%5s  %-30s %-14s %10s %10s %9s %6s %9s %9s %9s %9s\n", "line", "image / audio",
                  "format", "source", "resized", "grid|frames", "tokens", "decode", "resize",
                  "norm|feats", "total");
      return;
    }
    std::printf("%5s  %-30s %-14s %10s %10s %9s %6s %9s %9s %9s %9s\n", "line", "image", "format",
                "source", "resized", "grid", "tokens", "decode", "resize", "norm+patch", "total");
  }

  int finish(const std::string& data_path);

 private:
  ImageRow inspect_image(int line, const std::string& ref, const dataset::MediaResolver& scope) {
    ImageRow row;
    row.line = line;
    row.path = ref;
    auto fail = [&](const Error& e) {
      row.ok = false;
      row.code = e.code();
      row.error = e.to_string();
      return row;
    };
    if (model_.image == nullptr) {
      return fail(failed_precondition("the model (" + model_.name + ") takes no images"));
    }
    Result<std::string> uri = scope.resolve(ref);
    if (!uri.ok()) return fail(uri.error());
    Result<std::vector<std::uint8_t>> media = sources_.fetcher->fetch(*uri);
    if (!media.ok()) return fail(media.error());
    const std::vector<std::uint8_t>* bytes = &*media;
    row.bytes = static_cast<std::int64_t>(bytes->size());
    auto header = image::probe_image(*bytes);
    if (!header.ok()) return fail(header.error());
    row.header = *header;
    auto plan = proc().plan(*header);
    if (!plan.ok()) return fail(plan.error());
    row.plan = *plan;

    Stopwatch sw;
    // Decode, size check against the header, EXIF orientation (when the plan applies one).
    Status st = proc().decode(*bytes, *plan, &decoded_, &stored_);
    row.decode_s = sw.elapsed_s();
    if (!st.ok()) return fail(st.error());
    // The same steps as ImageProcessor::process, timed one by one (no resize at the same size).
    const image::RgbImage* img = &decoded_;
    if (plan->width != decoded_.width || plan->height != decoded_.height) {
      sw.reset();
      image::resize_bicubic_exact(decoded_, plan->width, plan->height, &resized_);
      row.resize_s = sw.elapsed_s();
      img = &resized_;
    }
    pixels_.resize(static_cast<std::size_t>(plan->rows() * proc().columns()));
    sw.reset();
    proc().normalize_patchify(*img, *plan, image::PixelDType::kFloat32, pixels_.data());
    row.normalize_s = sw.elapsed_s();
    row.ok = true;
    return row;
  }

  void emit_row(const ImageRow& r) const {
    if (json_) {
      std::string s = "{\"line\":" + std::to_string(r.line) + ",\"image\":" + json_string(r.path);
      if (!r.ok) {
        s += ",\"ok\":false,\"code\":" + json_string(error_code_name(r.code)) +
             ",\"error\":" + json_string(r.error) + "}";
      } else {
        char t[160];
        std::snprintf(t, sizeof t, ",\"decode_ms\":%.3f,\"resize_ms\":%.3f,\"normalize_ms\":%.3f,\"total_ms\":%.3f}",
                      r.decode_s * 1e3, r.resize_s * 1e3, r.normalize_s * 1e3, r.total_s() * 1e3);
        s += ",\"ok\":true,\"format\":" + json_string(image::format_name(r.header.format)) +
             ",\"mode\":" + json_string(r.header.mode) + ",\"bytes\":" + std::to_string(r.bytes) +
             ",\"width\":" + std::to_string(r.plan.src_width) + ",\"height\":" + std::to_string(r.plan.src_height) +
             ",\"resized_width\":" + std::to_string(r.plan.width) +
             ",\"resized_height\":" + std::to_string(r.plan.height) + ",\"grid\":[" +
             std::to_string(r.plan.grid_t) + "," + std::to_string(r.plan.grid_h) + "," +
             std::to_string(r.plan.grid_w) + "],\"tokens\":" + std::to_string(r.plan.tokens(merge())) + t;
      }
      std::printf("%s\n", s.c_str());
      return;
    }
    if (!r.ok) {
      std::printf("%5d  %-30s ERROR %s: %s\n", r.line, fit(printable(r.path), 30).c_str(),
                  std::string(error_code_name(r.code)).c_str(), printable(r.error).c_str());
      return;
    }
    const auto& p = r.plan;
    std::printf("%5d  %-30s %-14s %10s %10s %9s %6lld %9s %9s %9s %9s\n", r.line,
                fit(printable(r.path), 30).c_str(),
                format_str(r.header).c_str(), size_str(p.src_width, p.src_height).c_str(),
                size_str(p.width, p.height).c_str(),
                (std::to_string(p.grid_t) + "x" + std::to_string(p.grid_h) + "x" + std::to_string(p.grid_w)).c_str(),
                static_cast<long long>(p.tokens(merge())), human_time(r.decode_s).c_str(),
                human_time(r.resize_s).c_str(), human_time(r.normalize_s).c_str(), human_time(r.total_s()).c_str());
  }

  void emit_record_error(const RecordError& e) const {
    if (json_) {
      std::printf("{\"line\":%d,\"record\":%s,\"ok\":false,\"code\":%s,\"error\":%s}\n", e.line,
                  json_string(e.id).c_str(), json_string(error_code_name(e.code)).c_str(),
                  json_string(e.error).c_str());
    } else {
      std::printf("%5d  %-30s ERROR %s: %s\n", e.line,
                  e.id.empty() ? "(record)" : fit(printable(e.id), 30).c_str(),
                  std::string(error_code_name(e.code)).c_str(), printable(e.error).c_str());
    }
  }

  const image::ImageProcessor& proc() const { return *model_.image; }
  int merge() const { return model_.image != nullptr ? proc().config().merge_size : 2; }

  InspectModel model_;
  const pipeline::Context& sources_;
  bool json_;
  image::RgbImage decoded_, resized_, stored_;
  std::vector<float> pixels_;
  int records_ = 0;
  int videos_skipped_ = 0;
  int audios_skipped_ = 0;  // a model without audio
  std::vector<ImageRow> rows_;
  std::vector<AudioRow> audio_rows_;
  std::vector<RecordError> record_errors_;
};

int Inspector::finish(const std::string& data_path) {
  std::vector<double> totals;
  std::vector<std::int64_t> tokens;
  double decode = 0, resize = 0, normalize = 0;
  std::int64_t bytes = 0, pixels_in = 0, pixels_out = 0;
  std::map<std::string, int> by_format;
  std::vector<const ImageRow*> failed;
  for (const ImageRow& r : rows_) {
    if (!r.ok) {
      failed.push_back(&r);
      continue;
    }
    totals.push_back(r.total_s());
    tokens.push_back(r.plan.tokens(merge()));
    decode += r.decode_s, resize += r.resize_s, normalize += r.normalize_s;
    bytes += r.bytes;
    pixels_in += std::int64_t{r.plan.src_width} * r.plan.src_height;
    pixels_out += std::int64_t{r.plan.width} * r.plan.height;
    by_format[std::string(image::format_name(r.header.format))]++;
  }
  std::int64_t total_tokens = 0;
  for (auto t : tokens) total_tokens += t;
  const double busy = decode + resize + normalize;
  int errors = static_cast<int>(record_errors_.size() + failed.size());
  for (const AudioRow& r : audio_rows_) errors += r.ok ? 0 : 1;

  if (json_) {
    char t[512];
    std::snprintf(t, sizeof t,
                  "{\"summary\":{\"model\":%s,\"records\":%d,\"record_errors\":%zu,\"images\":%zu,"
                  "\"image_errors\":%zu,\"vision_tokens\":%lld,\"tokens_p50\":%lld,\"tokens_max\":%lld,"
                  "\"time_p50_ms\":%.3f,\"time_p99_ms\":%.3f,\"images_per_s\":%.2f,\"videos_skipped\":%d",
                  json_string(model_.name).c_str(), records_, record_errors_.size(), totals.size(),
                  failed.size(), static_cast<long long>(total_tokens),
                  static_cast<long long>(percentile(tokens, 50)),
                  static_cast<long long>(tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end())),
                  percentile(totals, 50) * 1e3, percentile(totals, 99) * 1e3,
                  busy > 0 ? totals.size() / busy : 0.0, videos_skipped_);
    std::fputs(t, stdout);
    if (model_.audio != nullptr) std::fputs(audio_summary_json(audio_rows_).c_str(), stdout);
    if (audios_skipped_) std::printf(",\"audios_skipped\":%d", audios_skipped_);
    // Long (a refusal quotes the template), so outside the fixed-size buffer.
    std::printf(",\"chat_template\":%s}}\n", json_string(model_.chat_template).c_str());
    return errors ? 1 : 0;
  }

  if (model_.image != nullptr) {
    const auto& cfg = proc().config();
    std::printf("\n%s with %s (patch %d, merge %d, pixels %s..%s)\n", printable(data_path).c_str(),
                model_.name.c_str(), cfg.patch_size, cfg.merge_size,
                with_commas(cfg.min_pixels).c_str(), with_commas(cfg.max_pixels).c_str());
  } else {
    std::printf("\n%s with %s (no images)\n", printable(data_path).c_str(), printable(model_.name).c_str());
  }
  // Not inspected per record, but a refused template stops `stoker run` / `render`: say so here.
  std::printf("  chat template  %s\n", model_.chat_template.c_str());
  std::printf("  records        %d read, %d ok, %zu rejected\n", records_,
              records_ - static_cast<int>(record_errors_.size()), record_errors_.size());
  std::string formats;
  for (auto& [f, n] : by_format) formats += (formats.empty() ? "" : ", ") + f + " " + std::to_string(n);
  std::printf("  images         %zu processed (%s), %zu failed; %s read, %.1f Mpx decoded -> %.1f Mpx resized\n",
              totals.size(), formats.empty() ? "none" : formats.c_str(), failed.size(),
              human_bytes(static_cast<double>(bytes)).c_str(), pixels_in / 1e6, pixels_out / 1e6);
  if (videos_skipped_) std::printf("  videos         %d skipped (video is not inspected yet)\n", videos_skipped_);
  if (audios_skipped_) std::printf("  audio          %d skipped (the model takes no audio)\n", audios_skipped_);
  if (!totals.empty()) {
    std::printf("  vision tokens  %s total; per image p50 %s, max %s\n", with_commas(total_tokens).c_str(),
                with_commas(percentile(tokens, 50)).c_str(),
                with_commas(*std::max_element(tokens.begin(), tokens.end())).c_str());
    std::printf("  time / image   p50 %s, p99 %s (decode %.0f%%, resize %.0f%%, normalise+patchify %.0f%%)\n",
                human_time(percentile(totals, 50)).c_str(), human_time(percentile(totals, 99)).c_str(),
                100 * decode / busy, 100 * resize / busy, 100 * normalize / busy);
    std::printf("  throughput     %.1f images/s, %.1f Mpx/s decoded, on one core\n", totals.size() / busy,
                pixels_in / 1e6 / busy);
  }
  if (model_.audio != nullptr) print_audio_summary(audio_rows_, *model_.audio);
  std::printf("  errors         %d\n", errors);
  std::vector<std::pair<int, std::string>> listed;  // in file order
  // Ids and paths come from the records: bounded (elide_middle), then escaped when printed. The
  // errors are bounded already (every Error message is).
  for (const RecordError& e : record_errors_)
    listed.emplace_back(e.line, (e.id.empty() ? "" : elide_middle(e.id) + ": ") +
                                    std::string(error_code_name(e.code)) + ": " + e.error);
  for (const ImageRow* r : failed)
    listed.emplace_back(r->line, elide_middle(r->path) + ": " +
                                     std::string(error_code_name(r->code)) + ": " + r->error);
  for (const AudioRow& r : audio_rows_) {
    if (r.ok) continue;
    listed.emplace_back(r.line, elide_middle(r.path) + (r.track ? " (audio track)" : "") + ": " +
                                    std::string(error_code_name(r.code)) + ": " + r.error);
  }
  std::stable_sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [line, text] : listed) {
    std::printf("    %s:%d: %s\n", printable(data_path).c_str(), line, printable(text).c_str());
  }
  return errors ? 1 : 0;
}

}  // namespace

int run_inspect(int argc, char** argv) {
  bool help = false;
  Result<config::Settings> settings = parse_command_line(argc, argv, config::kInspect, &help);
  if (help) {
    std::fputs(kHelp, stdout);
    std::fputs(options_help(config::kInspect).c_str(), stdout);
    return 0;
  }
  if (!settings.ok()) return report("inspect", settings.error());
  const pipeline::LoaderConfig& config = settings->loader;
  if (config.data.size() != 1) {
    return report("inspect", invalid_argument("expected one DATA.jsonl (see --help)"));
  }
  warn_settings(*settings, "inspect");
  const std::string data_path = config.data[0];
  const std::int64_t limit = settings->inspect.limit;
  InspectModel target;
  std::optional<image::ImageProcessor> own_proc;
  std::unique_ptr<model::Model> opened;
  if (config.model_config != nullptr) {
    // A Qwen-VL model: parsed once by the options, with the image settings (--exif,
    // --small-images).
    auto model = pipeline::resolved_model(config);
    if (!model.ok()) return report("inspect", model.error());
    auto proc = image::ImageProcessor::create(model->image);
    if (!proc.ok()) return report("inspect", proc.error());
    own_proc.emplace(std::move(*proc));
    target = {model->name, model::describe_chat_template(*model), &*own_proc, nullptr};
  } else {
    // A family without a parsed config (the audio families): opened as the Loader opens it
    // (tokenizer, template, processors).
    Result<std::unique_ptr<model::Model>> m =
        model::open_model(config.model, pipeline::model_options(config));
    if (!m.ok()) return report("inspect", m.error());
    opened = std::move(*m);
    target = {config.model, opened->renderer().describe(), opened->image_processor(),
              opened->audio_processor()};
  }

  pipeline::Context sources;
  if (Status st = pipeline::open_sources({data_path}, pipeline::source_options(config), &sources);
      !st.ok()) {
    return report("inspect", st.error());
  }
  Inspector inspector(std::move(target), sources, settings->inspect.json);
  inspector.print_header();
  const std::uint64_t n = sources.records->size();
  for (std::uint64_t id = 0; id < n && (limit < 0 || static_cast<std::int64_t>(id) < limit); ++id) {
    inspector.record(id);
  }
  return inspector.finish(redact_secrets(data_path));
}

}  // namespace stoker::cli
