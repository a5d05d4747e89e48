#include "stoker/synth/synth.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/base/json_text.h"
#include "stoker/image/smart_resize.h"
#include "stoker/synth/text.h"

namespace stoker::synth {
namespace {

constexpr int kMinSide = 32;  // every model's factor (28, 32) fits: no smart_resize size error
constexpr std::uint64_t kCoverageTag = 0xC0FE, kBadTag = 0xBAD, kRecordTag = 0x5EC;

enum class Damage { kNone, kMissing, kGarbage, kTruncate };

struct ImageJob {
  int record = 0;
  int index_in_record = 0;
  Variant variant = Variant::kJpeg420;
  Content content = Content::kPhoto;
  int want_w = 0, want_h = 0;  // before the variant's and the config's caps
  int width = 0, height = 0;
  std::uint64_t seed = 0;
  Damage damage = Damage::kNone;
  std::string path;
  // Filled in by the worker.
  std::int64_t bytes = 0, full_bytes = 0;
};

struct PartPlan {
  bool image = false;
  std::string text;
  int job = -1;
};

struct MessagePlan {
  std::string_view role;
  bool as_string = false;
  std::vector<PartPlan> parts;
};

struct RecordPlan {
  std::string id;
  RecordKind kind = RecordKind::kSingleImage;
  std::vector<MessagePlan> messages;
  bool bad = false;
  BadKind bad_kind = BadKind::kMissingImage;
};

// ---- sizes and variants ----------------------------------------------------------------------

std::pair<int, int> with_aspect(int long_side, double aspect) {  // aspect = w / h
  if (aspect >= 1) return {long_side, std::max(kMinSide, static_cast<int>(std::lround(long_side / aspect)))};
  return {std::max(kMinSide, static_cast<int>(std::lround(long_side * aspect))), long_side};
}

std::pair<int, int> draw_size(Rng& rng) {
  static const double kClasses[] = {10, 35, 33, 10, 3, 9};  // tiny small medium large 4K extreme
  static const double kAspects[] = {1.0, 4.0 / 3, 3.0 / 2, 16.0 / 9, 2.0, 3.0 / 4, 2.0 / 3, 9.0 / 16, 0.5};
  auto aspect = [&] { return rng.chance(0.6) ? rng.pick(kAspects) : rng.uniform(0.4, 2.5); };
  switch (rng.weighted(kClasses)) {
    case 0: return {rng.range(kMinSide, 64), rng.range(kMinSide, 64)};
    case 1: return with_aspect(rng.range(64, 512), aspect());
    case 2: return with_aspect(rng.range(512, 1600), aspect());
    case 3: return with_aspect(rng.range(1600, 2560), aspect());
    case 4: return rng.chance(0.8) ? std::pair{3840, 2160} : std::pair{2160, 3840};
    default: {
      int short_side = rng.range(kMinSide, 64);
      int long_side = std::min(2800, static_cast<int>(short_side * rng.uniform(8, 50)));
      return rng.chance(0.6) ? std::pair{long_side, short_side} : std::pair{short_side, long_side};
    }
  }
}

// Scales (w, h) down so that max(w, h) ≤ limit; the short side stays ≥ kMinSide when possible.
std::pair<int, int> cap_size(int w, int h, int limit) {
  if (std::max(w, h) <= limit) return {w, h};
  double s = static_cast<double>(limit) / std::max(w, h);
  int floor_side = std::min(kMinSide, limit);
  return {std::max(floor_side, static_cast<int>(std::lround(w * s))),
          std::max(floor_side, static_cast<int>(std::lround(h * s)))};
}

Variant draw_variant(Rng& rng) {
  auto variants = all_variants();
  std::vector<double> weights;
  for (const VariantInfo& v : variants) weights.push_back(v.weight);
  return variants[rng.weighted(weights)].variant;
}

Content draw_content(Rng& rng) {
  static const double kWeights[] = {12, 10, 14, 12, 36, 12};  // Content enum order
  return static_cast<Content>(rng.weighted(kWeights));
}

// ---- record planning --------------------------------------------------------------------------

class Planner {
 public:
  std::vector<ImageJob> jobs;
  std::vector<RecordPlan> records;

  void plan_record(int index, Rng rng, const BadKind* bad) {
    RecordPlan rec;
    images_in_record_ = 0;
    char id[32];
    std::snprintf(id, sizeof id, "synth-%06d", index);
    rec.id = id;
    static const double kKinds[] = {20, 40, 20, 20};  // RecordKind order
    rec.kind = static_cast<RecordKind>(rng.weighted(kKinds));
    if (bad) {
      rec.bad = true;
      rec.bad_kind = *bad;
      if (*bad != BadKind::kMalformedJson) rec.kind = RecordKind::kSingleImage;
    }
    if (rng.chance(0.3)) {
      MessagePlan sys{"system", rng.chance(0.75), {}};
      sys.parts.push_back({false, system_prompt(rng), -1});
      rec.messages.push_back(std::move(sys));
    }
    switch (rec.kind) {
      case RecordKind::kTextOnly: {
        int turns = rng.range(1, 3);
        for (int t = 0; t < turns; ++t) add_turn(rec, index, 0, rng);
        break;
      }
      case RecordKind::kSingleImage: add_turn(rec, index, 1, rng); break;
      case RecordKind::kMultiImage: add_turn(rec, index, rng.range(2, 4), rng); break;
      case RecordKind::kMultiTurn: {
        int turns = rng.range(2, 4);
        std::vector<int> counts(turns);
        counts[0] = static_cast<int>(rng.below(2));
        int later = 0;
        for (int t = 1; t < turns; ++t) later += counts[t] = rng.chance(0.6) ? rng.range(1, 2) : 0;
        if (later == 0) counts[turns - 1] = 1;
        for (int t = 0; t < turns; ++t) add_turn(rec, index, counts[t], rng);
        break;
      }
    }
    if (rec.bad && rec.bad_kind == BadKind::kNoAssistant) {
      std::erase_if(rec.messages, [](const MessagePlan& m) { return m.role == "assistant"; });
    }
    if (rec.bad) {
      int first_image = -1;
      for (const MessagePlan& m : rec.messages)
        for (const PartPlan& p : m.parts)
          if (p.image && first_image < 0) first_image = p.job;
      if (first_image >= 0) {
        Damage d = rec.bad_kind == BadKind::kMissingImage   ? Damage::kMissing
                   : rec.bad_kind == BadKind::kCorruptImage ? Damage::kGarbage
                   : rec.bad_kind == BadKind::kTruncatedImage ? Damage::kTruncate
                                                              : Damage::kNone;
        jobs[first_image].damage = d;
      }
    }
    records.push_back(std::move(rec));
  }

 private:
  int add_image(int record, Rng& rng) {
    ImageJob job;
    job.record = record;
    job.index_in_record = images_in_record_++;
    job.variant = draw_variant(rng);
    job.content = draw_content(rng);
    std::tie(job.want_w, job.want_h) = draw_size(rng);
    job.seed = rng.next();
    jobs.push_back(job);
    return static_cast<int>(jobs.size()) - 1;
  }

  void add_turn(RecordPlan& rec, int record, int images, Rng& rng) {
    MessagePlan user{"user", images == 0 && rng.chance(0.5), {}};
    bool text_first = images == 1 && rng.chance(0.2);
    bool intro = images > 1 && rng.chance(0.3);
    if (intro) user.parts.push_back({false, "Here are the images:", -1});
    if (text_first) user.parts.push_back({false, user_text(rng, images), -1});
    for (int k = 0; k < images; ++k) {
      if (images > 1 && rng.chance(0.4)) {
        user.parts.push_back({false, rng.chance(0.7) ? "Image " + std::to_string(k + 1) + ": "
                                                     : "图" + std::to_string(k + 1) + "：", -1});
      }
      user.parts.push_back({true, "", add_image(record, rng)});
    }
    if (!text_first) user.parts.push_back({false, user_text(rng, images), -1});
    rec.messages.push_back(std::move(user));
    MessagePlan assistant{"assistant", rng.chance(0.3), {}};
    assistant.parts.push_back({false, assistant_text(rng), -1});
    rec.messages.push_back(std::move(assistant));
  }

  int images_in_record_ = 0;
};

// Every variant appears at least once when there are enough intact images: the first
// |variants| intact images in a seeded order get one variant each.
void ensure_coverage(std::vector<ImageJob>& jobs, Rng rng) {
  std::vector<int> intact;
  for (int i = 0; i < static_cast<int>(jobs.size()); ++i)
    if (jobs[i].damage == Damage::kNone) intact.push_back(i);
  rng.shuffle(std::span<int>(intact));
  auto variants = all_variants();
  for (size_t i = 0; i < intact.size() && i < variants.size(); ++i) jobs[intact[i]].variant = variants[i].variant;
}

void finalise_jobs(std::vector<ImageJob>& jobs, int max_side) {
  for (ImageJob& j : jobs) {
    const VariantInfo& info = variant_info(j.variant);
    std::tie(j.width, j.height) = cap_size(j.want_w, j.want_h, std::min(max_side, info.max_side));
    // White noise at high resolution makes 10+ MB files; keep those photo-like.
    if (j.content == Content::kNoise && std::int64_t{j.width} * j.height > 1'000'000) j.content = Content::kPhoto;
    // PNGs in the wild are mostly screenshots and graphics; noisy photos also make zlib slow.
    if (info.format == image::ImageFormat::kPng && j.content == Content::kPhoto && Rng(j.seed).chance(0.6)) {
      static const Content kGraphics[] = {Content::kDocument, Content::kChecker, Content::kGradient};
      j.content = kGraphics[Rng(~j.seed).below(3)];
    }
    char name[48];
    std::snprintf(name, sizeof name, "images/%06d_%d.%s", j.record, j.index_in_record,
                  std::string(info.extension).c_str());
    j.path = name;
  }
}

// Qwen2/2.5-VL's vision tokens for a w x h image at the processors' default pixel bounds
// (factor 28, [56², 28²·16384]); an image smart_resize refuses (aspect > 200) counts 0.
std::int64_t vision_tokens(int w, int h) {
  Result<image::ResizedSize> r = image::smart_resize(h, w, 28, 56 * 56, std::int64_t{28} * 28 * 16384);
  if (!r.ok()) return 0;
  return std::int64_t{r->height / 28} * (r->width / 28);
}

// Scales down the images of every record whose vision tokens exceed kRecordVisionTokens (all of
// its images by one factor, keeping their aspect ratios), so the record fits max_length 8192.
void fit_records(std::vector<ImageJob>& jobs) {
  std::map<int, std::vector<ImageJob*>> by_record;
  for (ImageJob& j : jobs) by_record[j.record].push_back(&j);
  for (auto& [record, images] : by_record) {
    for (int round = 0; round < 32; ++round) {
      std::int64_t total = 0;
      for (const ImageJob* j : images) total += vision_tokens(j->width, j->height);
      if (total <= kRecordVisionTokens) break;
      const double s = std::sqrt(static_cast<double>(kRecordVisionTokens) / total) * 0.97;
      for (ImageJob* j : images) {
        const int limit = std::max(kMinSide, static_cast<int>(std::max(j->width, j->height) * s));
        std::tie(j->width, j->height) = cap_size(j->width, j->height, limit);
      }
    }
  }
}

// ---- serialisation ----------------------------------------------------------------------------

std::string record_json(const RecordPlan& rec, const std::vector<ImageJob>& jobs) {
  std::string s = "{\"id\":";
  append_json_string(s, rec.id);
  s += ",\"messages\":[";
  for (size_t m = 0; m < rec.messages.size(); ++m) {
    const MessagePlan& msg = rec.messages[m];
    if (m) s += ',';
    s += "{\"role\":";
    append_json_string(s, msg.role);
    s += ",\"content\":";
    if (msg.as_string) {
      append_json_string(s, msg.parts.at(0).text);
    } else {
      s += '[';
      for (size_t p = 0; p < msg.parts.size(); ++p) {
        if (p) s += ',';
        if (msg.parts[p].image) {
          // width/height: the file's true size, for checkers (readers ignore unknown keys).
          const ImageJob& j = jobs[msg.parts[p].job];
          s += "{\"type\":\"image\",\"image\":";
          append_json_string(s, j.path);
          if (j.damage == Damage::kNone)
            s += ",\"width\":" + std::to_string(j.width) + ",\"height\":" + std::to_string(j.height);
        } else {
          s += "{\"type\":\"text\",\"text\":";
          append_json_string(s, msg.parts[p].text);
        }
        s += '}';
      }
      s += ']';
    }
    s += '}';
  }
  s += "]}";
  return s;
}

// Cuts a JSON line inside its body at an ASCII byte: always invalid JSON, still valid UTF-8.
std::string cut_line(const std::string& line, Rng& rng) {
  size_t pos = line.size() * rng.range(30, 80) / 100;
  while (pos > 1 && (static_cast<unsigned char>(line[pos]) & 0x80)) --pos;
  return line.substr(0, pos);
}

std::string image_meta_json(const ImageEntry& e) {
  const VariantInfo& info = variant_info(e.variant);
  std::string s = "{\"path\":" + json_string(e.path) + ",\"record\":" + json_string(e.record_id) +
                  ",\"record_ok\":" + (e.record_ok ? "true" : "false") +
                  ",\"variant\":" + json_string(info.name) +
                  ",\"format\":" + json_string(image::format_name(info.format)) +
                  ",\"mode\":" + json_string(info.mode) + ",\"bit_depth\":" + std::to_string(info.bit_depth) +
                  ",\"progressive\":" + (info.progressive ? "true" : "false") +
                  ",\"width\":" + std::to_string(e.width) + ",\"height\":" + std::to_string(e.height) +
                  ",\"content\":" + json_string(content_name(e.content)) +
                  ",\"bytes\":" + std::to_string(e.bytes) + "}\n";
  return s;
}

std::string bad_json(const BadEntry& b) {
  std::string s = "{\"line\":" + std::to_string(b.line) + ",\"id\":" + json_string(b.id) +
                  ",\"kind\":" + json_string(bad_kind_name(b.kind));
  if (!b.image.empty()) s += ",\"image\":" + json_string(b.image);
  s += ",\"reason\":" + json_string(b.reason) + "}\n";
  return s;
}

// ---- rendering --------------------------------------------------------------------------------

Status make_image(const std::string& out_dir, ImageJob& job, bool flat) {
  if (job.damage == Damage::kMissing) return ok_status();
  Rng rng(job.seed);
  std::vector<std::uint8_t> bytes;
  if (job.damage == Damage::kGarbage) {
    // Half the time a real signature first, so a decoder gets past format detection.
    static const std::uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0};
    static const std::uint8_t kPng[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    static const std::uint8_t kWebp[] = {'R', 'I', 'F', 'F', 0x40, 0, 0, 0, 'W', 'E', 'B', 'P'};
    if (rng.chance(0.5)) {
      switch (variant_info(job.variant).format) {
        case image::ImageFormat::kJpeg: bytes.assign(std::begin(kJpeg), std::end(kJpeg)); break;
        case image::ImageFormat::kPng: bytes.assign(std::begin(kPng), std::end(kPng)); break;
        case image::ImageFormat::kWebp: bytes.assign(std::begin(kWebp), std::end(kWebp)); break;
      }
    }
    int n = rng.range(64, 4096);
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(rng.below(256)));
    job.full_bytes = static_cast<std::int64_t>(bytes.size());
  } else {
    image::RgbImage rgb;
    if (flat) {
      rgb.width = job.width;
      rgb.height = job.height;
      rgb.pixels.assign(static_cast<std::size_t>(job.width) * job.height * 3, 128);
    } else {
      rgb = render_content(job.content, job.width, job.height, rng);
    }
    STOKER_ASSIGN_OR_RETURN(bytes, encode_variant(job.variant, rgb, rng));
    job.full_bytes = static_cast<std::int64_t>(bytes.size());
    if (job.damage == Damage::kTruncate) bytes.resize(bytes.size() * rng.range(20, 70) / 100);
  }
  job.bytes = static_cast<std::int64_t>(bytes.size());
  Status st = write_file(out_dir + "/" + job.path, bytes);
  if (!st.ok()) return std::move(st).error().with_context("writing " + job.path);
  return ok_status();
}

Status make_images(const std::string& out_dir, std::vector<ImageJob>& jobs, int threads,
                   bool flat = false) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min<int>(threads, std::max<size_t>(1, jobs.size()));
  // Biggest first so one 4K image does not finish last on its own.
  std::vector<int> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::int64_t{jobs[a].width} * jobs[a].height > std::int64_t{jobs[b].width} * jobs[b].height;
  });
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < order.size();) {
      Status st = make_image(out_dir, jobs[order[i]], flat);
      if (!st.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = std::move(st);
        next = order.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return first_error;
}

Status make_dirs(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(out_dir) / "images", ec);
  if (ec) return permission_denied("creating " + out_dir + "/images: " + ec.message());
  return ok_status();
}

std::string bad_reason(const RecordPlan& rec, const ImageJob* job, const std::string& line) {
  switch (rec.bad_kind) {
    case BadKind::kMissingImage: return "image file does not exist: " + job->path;
    case BadKind::kCorruptImage: return "image is " + std::to_string(job->bytes) + " bytes of garbage: " + job->path;
    case BadKind::kTruncatedImage:
      return "image truncated to " + std::to_string(job->bytes) + " of " + std::to_string(job->full_bytes) +
             " bytes: " + job->path;
    case BadKind::kMalformedJson: return "malformed JSON: line cut off after " + std::to_string(line.size()) + " bytes";
    case BadKind::kNoAssistant: return "conversation has no assistant turn";
  }
  return "";
}

}  // namespace

std::string_view bad_kind_name(BadKind k) {
  switch (k) {
    case BadKind::kMissingImage: return "missing_image";
    case BadKind::kCorruptImage: return "corrupt_image";
    case BadKind::kTruncatedImage: return "truncated_image";
    case BadKind::kMalformedJson: return "malformed_json";
    case BadKind::kNoAssistant: return "no_assistant";
  }
  return "?";
}

std::string_view record_kind_name(RecordKind k) {
  switch (k) {
    case RecordKind::kTextOnly: return "text-only";
    case RecordKind::kSingleImage: return "single-image";
    case RecordKind::kMultiImage: return "multi-image";
    case RecordKind::kMultiTurn: return "multi-turn";
  }
  return "?";
}

Status SynthConfig::validate() const {
  if (out_dir.empty()) return invalid_argument("an output directory is required");
  if (records < 1 || records > 10'000'000) return invalid_argument("records must be in [1, 1e7]");
  if (max_side < kMinSide) return invalid_argument("max side must be ≥ " + std::to_string(kMinSide));
  if (!(bad_fraction >= 0 && bad_fraction <= 1)) return invalid_argument("bad fraction must be in [0, 1]");
  return ok_status();
}

Status ImagesOnlyConfig::validate() const {
  if (out_dir.empty()) return invalid_argument("an output directory is required");
  if (count < 1 || count > 10'000'000) return invalid_argument("count must be in [1, 1e7]");
  if (width < 1 || height < 1 || width > 16383 || height > 16383)
    return invalid_argument("size must be within 1..16383 per side");
  return ok_status();
}

Result<SynthResult> generate_dataset(const SynthConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  Stopwatch clock;
  const Rng master(config.seed);

  // Which records are broken, and how: kinds in turn so that five bad records cover all kinds.
  std::vector<int> bad_of(config.records, -1);
  if (config.bad_fraction > 0) {
    int n_bad = std::clamp(static_cast<int>(std::lround(config.records * config.bad_fraction)), 1, config.records);
    std::vector<int> idx(config.records);
    for (int i = 0; i < config.records; ++i) idx[i] = i;
    Rng rng = master.fork(kBadTag);
    rng.shuffle(std::span<int>(idx));
    for (int k = 0; k < n_bad; ++k) bad_of[idx[k]] = k % 5;
  }

  Planner planner;
  for (int i = 0; i < config.records; ++i) {
    BadKind kind = static_cast<BadKind>(std::max(bad_of[i], 0));
    planner.plan_record(i, master.fork(kRecordTag + static_cast<std::uint64_t>(i) * 2654435761ULL),
                        bad_of[i] >= 0 ? &kind : nullptr);
  }
  std::vector<ImageJob>& jobs = planner.jobs;
  ensure_coverage(jobs, master.fork(kCoverageTag));
  finalise_jobs(jobs, config.max_side);
  if (!config.long_records) fit_records(jobs);

  STOKER_RETURN_IF_ERROR(make_dirs(config.out_dir));
  STOKER_RETURN_IF_ERROR(make_images(config.out_dir, jobs, config.threads, config.flat_pixels));

  SynthResult result;
  result.data_path = config.out_dir + "/data.jsonl";
  result.records = config.records;
  std::string data, images_meta, bad_text;
  for (size_t r = 0; r < planner.records.size(); ++r) {
    const RecordPlan& rec = planner.records[r];
    std::string line = record_json(rec, jobs);
    const ImageJob* damaged = nullptr;
    for (const MessagePlan& m : rec.messages)
      for (const PartPlan& p : m.parts) {
        if (!p.image) continue;
        const ImageJob& j = jobs[p.job];
        result.image_bytes += j.bytes;
        if (j.damage != Damage::kNone) {
          damaged = &j;
          continue;
        }
        ImageEntry e{j.path, rec.id, !rec.bad, j.variant, j.content, j.width, j.height, j.bytes};
        images_meta += image_meta_json(e);
        result.images.push_back(std::move(e));
      }
    if (rec.bad) {
      if (rec.bad_kind == BadKind::kMalformedJson) {
        Rng cut_rng = master.fork(kBadTag + 1 + r);
        line = cut_line(line, cut_rng);
      }
      BadEntry b{static_cast<int>(r) + 1, rec.id, rec.bad_kind, damaged ? damaged->path : "",
                 bad_reason(rec, damaged, line)};
      bad_text += bad_json(b);
      result.bad.push_back(std::move(b));
    }
    data += line;
    data += '\n';
    result.records_by_kind[rec.kind]++;
    if (!rec.messages.empty() && rec.messages[0].role == "system") result.with_system++;
  }
  result.jsonl_bytes = static_cast<std::int64_t>(data.size());
  STOKER_RETURN_IF_ERROR(write_text_file(result.data_path, data));
  STOKER_RETURN_IF_ERROR(write_text_file(config.out_dir + "/images.jsonl", images_meta));
  if (config.bad_fraction > 0) STOKER_RETURN_IF_ERROR(write_text_file(config.out_dir + "/bad.jsonl", bad_text));
  result.seconds = clock.elapsed_s();
  return result;
}

Result<SynthResult> generate_images_only(const ImagesOnlyConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  Stopwatch clock;
  const Rng master(config.seed);
  std::vector<ImageJob> jobs(config.count);
  for (int i = 0; i < config.count; ++i) {
    ImageJob& j = jobs[i];
    j.record = i;
    j.variant = config.variant;
    j.content = config.content;
    j.width = config.width;
    j.height = config.height;
    j.seed = master.fork(static_cast<std::uint64_t>(i)).next();
    char name[48];
    std::snprintf(name, sizeof name, "images/%06d.%s", i,
                  std::string(variant_info(config.variant).extension).c_str());
    j.path = name;
  }
  STOKER_RETURN_IF_ERROR(make_dirs(config.out_dir));
  STOKER_RETURN_IF_ERROR(make_images(config.out_dir, jobs, config.threads));
  SynthResult result;
  result.data_path = config.out_dir + "/data.jsonl";
  result.records = config.count;
  result.records_by_kind[RecordKind::kSingleImage] = config.count;
  std::string data, images_meta;
  for (const ImageJob& j : jobs) {
    char id[32];
    std::snprintf(id, sizeof id, "image-%06d", j.record);
    data += "{\"id\":\"" + std::string(id) + "\",\"messages\":[{\"role\":\"user\",\"content\":[" +
            "{\"type\":\"image\",\"image\":" + json_string(j.path) + ",\"width\":" +
            std::to_string(j.width) + ",\"height\":" + std::to_string(j.height) + "},{\"type\":\"text\",\"text\":\"Describe the image.\"}]},{\"role\":\"assistant\"," +
            "\"content\":[{\"type\":\"text\",\"text\":\"A synthetic photo-like scene.\"}]}]}\n";
    ImageEntry e{j.path, id, true, j.variant, j.content, j.width, j.height, j.bytes};
    images_meta += image_meta_json(e);
    result.image_bytes += j.bytes;
    result.images.push_back(std::move(e));
  }
  result.jsonl_bytes = static_cast<std::int64_t>(data.size());
  STOKER_RETURN_IF_ERROR(write_text_file(result.data_path, data));
  STOKER_RETURN_IF_ERROR(write_text_file(config.out_dir + "/images.jsonl", images_meta));
  result.seconds = clock.elapsed_s();
  return result;
}

std::string summary_text(const SynthResult& r) {
  auto mb = [](std::int64_t b) {
    char buf[32];
    if (b < 1'000'000) std::snprintf(buf, sizeof buf, "%.1f kB", static_cast<double>(b) / 1e3);
    else std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(b) / 1e6);
    return std::string(buf);
  };
  std::string s = "wrote " + std::to_string(r.records) + " records to " + r.data_path + " (";
  bool first = true;
  for (auto& [kind, n] : r.records_by_kind) {
    s += (first ? "" : ", ") + std::to_string(n) + " " + std::string(record_kind_name(kind));
    first = false;
  }
  s += "; " + std::to_string(r.with_system) + " with a system message)";
  std::map<std::string, int> by_format;
  std::map<std::string_view, int> by_variant;
  for (const ImageEntry& e : r.images) {
    by_format[std::string(image::format_name(variant_info(e.variant).format))]++;
    by_variant[variant_info(e.variant).name]++;
  }
  s += " with " + std::to_string(r.images.size()) + " intact images (";
  first = true;
  for (auto& [f, n] : by_format) s += (first ? "" : ", ") + f + " " + std::to_string(n), first = false;
  s += "; variants:";
  for (auto& [v, n] : by_variant) s += " " + std::string(v) + "×" + std::to_string(n);
  s += "), " + mb(r.image_bytes) + " of images + " + mb(r.jsonl_bytes) + " of JSONL";
  if (!r.bad.empty()) {
    s += "; " + std::to_string(r.bad.size()) + " deliberately broken records listed in bad.jsonl";
  }
  char t[48];
  std::snprintf(t, sizeof t, ", in %.2f s.", r.seconds);
  return s + t;
}

}  // namespace stoker::synth
