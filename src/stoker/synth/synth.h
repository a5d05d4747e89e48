// `stoker synth`: a deterministic generator of realistic synthetic SFT data from a seed.
// generate_dataset writes DIR/data.jsonl (OpenAI-messages records, image paths relative to the
// JSONL), DIR/images/<record>_<k>.<ext>, DIR/images.jsonl (one line per written image: path,
// variant, Pillow mode, size, content, bytes) and, with bad_fraction > 0, DIR/bad.jsonl (which
// data.jsonl line is broken and how). generate_images_only writes photo-like images of one size
// and variant for benchmarks (plus a one-image-per-record data.jsonl and images.jsonl).
// Same config → byte-identical files, whatever the thread count. Blocking; uses `threads`
// worker threads internally. Errors: InvalidArgument (config), those of the encoders and of
// file writes (NotFound, PermissionDenied, DataLoss).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/synth/media.h"
#include "stoker/synth/pattern.h"

namespace stoker::synth {

struct SynthConfig {
  std::string out_dir;
  int records = 64;
  std::uint64_t seed = 0;
  int max_side = 3840;        // no image side above this (≥ 32)
  double bad_fraction = 0.0;  // share of records made deliberately broken, [0, 1]
  int threads = 0;            // 0: hardware concurrency
  // Every image one flat colour: the same records, sizes, formats and variants, many times faster
  // to write — for planning studies (`stoker bench packing`), whose lengths depend on image sizes
  // and text only. Not for pixel tests.
  bool flat_pixels = false;
  // Records whose images would take more than kRecordVisionTokens vision tokens (Qwen2/2.5-VL,
  // the most tokens per pixel of the presets) have those images scaled down, so that every
  // record fits the default max_length (8192) with its text: a loader's default run drops none.
  // true: sizes as drawn (a 3840x2160 image alone is ~10.6k tokens), for overflow tests.
  bool long_records = false;
  Status validate() const;
};

// Vision tokens one record's images may take unless SynthConfig::long_records (the rest of the
// default max_length 8192 is the record's text and the chat template's, < 1k tokens here).
inline constexpr std::int64_t kRecordVisionTokens = 6144;

struct ImagesOnlyConfig {
  std::string out_dir;
  int count = 64;
  std::uint64_t seed = 0;
  int width = 1920;
  int height = 1080;
  Variant variant = Variant::kJpeg420;
  Content content = Content::kPhoto;
  int threads = 0;
  Status validate() const;
};

enum class BadKind { kMissingImage, kCorruptImage, kTruncatedImage, kMalformedJson, kNoAssistant };
std::string_view bad_kind_name(BadKind k);  // "missing_image", ..., "no_assistant"

enum class RecordKind { kTextOnly, kSingleImage, kMultiImage, kMultiTurn };
std::string_view record_kind_name(RecordKind k);

struct ImageEntry {
  std::string path;  // relative to out_dir
  std::string record_id;
  bool record_ok = true;  // false: the record is one of the deliberately broken ones
  Variant variant = Variant::kJpeg420;
  Content content = Content::kPhoto;
  int width = 0, height = 0;
  std::int64_t bytes = 0;
};

struct BadEntry {
  int line = 0;  // 1-based line in data.jsonl
  std::string id;
  BadKind kind = BadKind::kMissingImage;
  std::string image;  // the affected image path, if any
  std::string reason;
};

struct SynthResult {
  std::string data_path;  // out_dir/data.jsonl
  int records = 0;
  std::map<RecordKind, int> records_by_kind;
  int with_system = 0;
  std::vector<ImageEntry> images;  // every image file written intact, in data.jsonl order
  std::vector<BadEntry> bad;
  std::int64_t image_bytes = 0;  // all image files, broken ones included
  std::int64_t jsonl_bytes = 0;
  double seconds = 0;
};

Result<SynthResult> generate_dataset(const SynthConfig& config);
Result<SynthResult> generate_images_only(const ImagesOnlyConfig& config);

// One paragraph for humans: records by kind, images by format and variant, bytes, time.
std::string summary_text(const SynthResult& result);

}  // namespace stoker::synth
