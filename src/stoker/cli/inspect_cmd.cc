// `stoker inspect`: reads a JSONL dataset, runs every image through the model's image processor
// stage by stage, and prints what a user wants to know before training on it: per image the
// format, source and resized size, grid and vision tokens and the time of each stage; then a
// summary. Bad records and images are reported with file:line and the reason; the run goes on.
// Records and media come through the engine's own sources (pipeline::open_sources): the same
// manifest index, trust boundary, store and caps as `stoker run`, local or remote.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/base/elide.h"
#include "stoker/base/printable.h"
#include "stoker/base/redact.h"
#include "stoker/cli/commands.h"
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

std::string human_time(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string human_bytes(double b) {
  char buf[32];
  if (b < 1e3) std::snprintf(buf, sizeof buf, "%.0f B", b);
  else if (b < 1e6) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else if (b < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

std::string with_commas(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string size_str(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

// "…tail" so that the end of a long path (the file name) stays visible.
std::string fit(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  std::size_t start = s.size() - (width - 3);
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  std::string out = "...";
  out.append(s, start);
  return out;
}

std::string format_str(const image::ImageHeader& h) {
  std::string s = std::string(image::format_name(h.format)) + " " + h.mode;
  if (h.progressive) s += " prog";
  if (h.format == image::ImageFormat::kPng && h.bit_depth != 8) s += " " + std::to_string(h.bit_depth) + "b";
  return s;
}

template <typename T>
T percentile(std::vector<T> v, double p) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

class Inspector {
 public:
  // `sources`: the record source and the fetcher from pipeline::open_sources.
  Inspector(const model::ModelConfig& model, image::ImageProcessor proc,
            const pipeline::Context& sources, bool json)
      : model_(model), proc_(std::move(proc)), sources_(sources), json_(json) {}

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
        if (p.kind != dataset::Part::Kind::kImage) continue;
        ImageRow row = inspect_image(line, p.value, scope);
        emit_row(row);
        rows_.push_back(std::move(row));
      }
  }

  void print_header() const {
    if (json_) return;
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
    Result<std::string> uri = scope.resolve(ref);
    if (!uri.ok()) return fail(uri.error());
    Result<std::vector<std::uint8_t>> media = sources_.fetcher->fetch(*uri);
    if (!media.ok()) return fail(media.error());
    const std::vector<std::uint8_t>* bytes = &*media;
    row.bytes = static_cast<std::int64_t>(bytes->size());
    auto header = image::probe_image(*bytes);
    if (!header.ok()) return fail(header.error());
    row.header = *header;
    auto plan = proc_.plan(*header);
    if (!plan.ok()) return fail(plan.error());
    row.plan = *plan;

    Stopwatch sw;
    // Decode, size check against the header, EXIF orientation (when the plan applies one).
    Status st = proc_.decode(*bytes, *plan, &decoded_, &stored_);
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
    pixels_.resize(static_cast<std::size_t>(plan->rows() * proc_.columns()));
    sw.reset();
    proc_.normalize_patchify(*img, *plan, image::PixelDType::kFloat32, pixels_.data());
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

  int merge() const { return proc_.config().merge_size; }

  const model::ModelConfig& model_;
  image::ImageProcessor proc_;
  const pipeline::Context& sources_;
  bool json_;
  image::RgbImage decoded_, resized_, stored_;
  std::vector<float> pixels_;
  int records_ = 0;
  int videos_skipped_ = 0;
  std::vector<ImageRow> rows_;
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
  const int errors = static_cast<int>(record_errors_.size() + failed.size());
  const auto& cfg = proc_.config();

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
    // Long (a refusal quotes the template), so outside the fixed-size buffer.
    std::printf(",\"chat_template\":%s}}\n", json_string(model::describe_chat_template(model_)).c_str());
    return errors ? 1 : 0;
  }

  std::printf("\n%s with %s (patch %d, merge %d, pixels %s..%s)\n", printable(data_path).c_str(), model_.name.c_str(),
              cfg.patch_size, cfg.merge_size, with_commas(cfg.min_pixels).c_str(),
              with_commas(cfg.max_pixels).c_str());
  // Not inspected per record, but a refused template stops `stoker run` / `render`: say so here.
  std::printf("  chat template  %s\n", model::describe_chat_template(model_).c_str());
  std::printf("  records        %d read, %d ok, %zu rejected\n", records_,
              records_ - static_cast<int>(record_errors_.size()), record_errors_.size());
  std::string formats;
  for (auto& [f, n] : by_format) formats += (formats.empty() ? "" : ", ") + f + " " + std::to_string(n);
  std::printf("  images         %zu processed (%s), %zu failed; %s read, %.1f Mpx decoded -> %.1f Mpx resized\n",
              totals.size(), formats.empty() ? "none" : formats.c_str(), failed.size(),
              human_bytes(static_cast<double>(bytes)).c_str(), pixels_in / 1e6, pixels_out / 1e6);
  if (videos_skipped_) std::printf("  videos         %d skipped (video is not inspected yet)\n", videos_skipped_);
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
  // The model parsed once by the options, with the image settings (--exif, --small-images).
  auto model = pipeline::resolved_model(config);
  if (!model.ok()) return report("inspect", model.error());
  auto proc = image::ImageProcessor::create(model->image);
  if (!proc.ok()) return report("inspect", proc.error());

  pipeline::Context sources;
  if (Status st = pipeline::open_sources({data_path}, pipeline::source_options(config), &sources);
      !st.ok()) {
    return report("inspect", st.error());
  }
  Inspector inspector(*model, std::move(*proc), sources, settings->inspect.json);
  inspector.print_header();
  const std::uint64_t n = sources.records->size();
  for (std::uint64_t id = 0; id < n && (limit < 0 || static_cast<std::int64_t>(id) < limit); ++id) {
    inspector.record(id);
  }
  return inspector.finish(redact_secrets(data_path));
}

}  // namespace stoker::cli
