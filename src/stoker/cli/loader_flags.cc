#include "stoker/cli/loader_flags.h"

#include <cstdio>
#include <limits>
#include <string_view>
#include <vector>

#include "stoker/exec/sched.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"

namespace stoker::cli {
namespace {

constexpr std::int64_t kMaxDeadlineMs = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxArenaMb = std::int64_t{1} << 42;  // 4 PiB

// "a.jsonl,b.jsonl" and several positional arguments alike.
std::vector<std::string> split_paths(const std::vector<std::string>& positional) {
  std::vector<std::string> out;
  for (const std::string& p : positional) {
    std::string_view rest = p;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      if (!one.empty()) out.emplace_back(one);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return out;
}

}  // namespace

const char kPackingFlagsHelp[] = R"(
packing and token budgets (a global plan every rank computes alike; pipeline/README.md):
  --packing            pack whole samples into rows of at most --max-tokens tokens (best-fit
                       decreasing within a window), one row per batch, no padding
  --token-budget       padded batches whose size is chosen per step: size x longest <= --max-tokens
  --max-tokens N       tokens per pack row / batch (default: --max-length)
  --pack-format F      hf (default: varlen kwargs for transformers) | megatron (THD, shifted labels)
  --pack-window W      samples planned together (default 1000)
  --pack-align A       megatron: each sub-sequence padded to a multiple of A (default 1; e.g. 2*CP)
  --position-rows R    hf: 4 (text row + mRoPE, default) or 3 (mRoPE only, older transformers)
  --truncate           cut samples over --max-length at whole turns instead of dropping them
)";

Result<pipeline::PackingOptions> packing_from_flags(const Args& args) {
  constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();
  pipeline::PackingOptions p;
  if (args.has("packing") && args.has("token-budget")) {
    return invalid_argument("--packing and --token-budget exclude each other");
  }
  if (args.has("packing")) p.batching = pipeline::Batching::kPack;
  if (args.has("token-budget")) p.batching = pipeline::Batching::kTokenBudget;
  const bool on = p.batching != pipeline::Batching::kFixed;
  for (const char* f : {"max-tokens", "pack-format", "pack-window", "pack-align", "position-rows"}) {
    if (!on && args.has(f)) {
      return invalid_argument(std::string("--") + f + " needs --packing or --token-budget");
    }
  }
  STOKER_ASSIGN_OR_RETURN(p.max_tokens, args.get_int<std::int64_t>("max-tokens", 0, 1, kI32Max));
  STOKER_ASSIGN_OR_RETURN(p.window, args.get_int<int>("pack-window", 1000, 1, 1 << 24));
  STOKER_ASSIGN_OR_RETURN(p.align, args.get_int<std::int64_t>("pack-align", 1, 1, 1 << 20));
  STOKER_ASSIGN_OR_RETURN(p.position_rows, args.get_int<int>("position-rows", 4, 3, 4));
  const std::string format = args.get("pack-format", "hf");
  if (format == "hf") p.format = batch::PackFormat::kHF;
  else if (format == "megatron") p.format = batch::PackFormat::kMegatron;
  else return invalid_argument("--pack-format hf|megatron, not '" + format + "'");
  if (p.batching == pipeline::Batching::kTokenBudget && args.has("pack-format")) {
    return invalid_argument("--pack-format is for --packing (token budgets give padded batches)");
  }
  if (p.format != batch::PackFormat::kMegatron && args.has("pack-align")) {
    return invalid_argument("--pack-align is for --pack-format megatron");
  }
  return p;
}

const char kMediaFlagsHelp[] = R"(
media and I/O limits (what a manifest's records may read, and how much):
  --media-root DIR     a local manifest may also read media under DIR (repeatable; default: only
                       under the manifest's own folder); a remote manifest never reads local files
  --trust-media-paths  a local manifest may read ANY file this user can read (warns on stderr)
  --allow-bucket NAME  s3:// media may also come from bucket NAME (repeatable; '*': any bucket;
                       default: only the remote manifest's own bucket)
  --max-object-bytes N largest media object read (default 256M; bytes, or K/M/G/T, KiB/MiB/...)
  --max-record-bytes N longest JSONL record, one line (default 16M; at most 4G)
  --io-deadline-ms MS  retry window of one remote request, all attempts together (default:
                       $STOKER_IO_DEADLINE_MS, else 120000)
  --imds               S3 credentials may come from the EC2 instance metadata service (otherwise
                       it is consulted only when $AWS_EC2_METADATA_SERVICE_ENDPOINT is set)
)";

std::set<std::string> media_value_flags() {
  return {"max-object-bytes", "max-record-bytes", "io-deadline-ms"};
}
std::set<std::string> media_repeat_flags() { return {"media-root", "allow-bucket"}; }
std::set<std::string> media_switch_flags() { return {"trust-media-paths", "imds"}; }

Result<MediaFlags> media_flags_from(const Args& args) {
  MediaFlags m;
  m.media_roots = args.get_all("media-root");
  m.allow_buckets = args.get_all("allow-bucket");
  for (const std::string& r : m.media_roots) {
    if (r.empty()) return invalid_argument("--media-root needs a folder, got ''");
  }
  for (const std::string& b : m.allow_buckets) {
    if (b.empty()) return invalid_argument("--allow-bucket needs a bucket name or '*', got ''");
  }
  m.trust_media_paths = args.has("trust-media-paths");
  m.imds = args.has("imds");
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  STOKER_ASSIGN_OR_RETURN(m.max_object_bytes,
                          args.get_bytes("max-object-bytes", m.max_object_bytes, 1, kMax));
  // The engine's cap (LoaderConfig::validate): one line is read into one buffer.
  STOKER_ASSIGN_OR_RETURN(m.max_record_bytes, args.get_bytes("max-record-bytes",
                                                             m.max_record_bytes, 1,
                                                             std::int64_t{4} << 30));
  // ≤ 2^31-1 ms (24.8 days): fits an int and a nanosecond deadline however it is stored.
  STOKER_ASSIGN_OR_RETURN(m.io_deadline_ms, args.get_int<std::int64_t>(
                                                "io-deadline-ms", 0, 1, kMaxDeadlineMs));
  if (m.trust_media_paths) {
    std::fprintf(stderr,
                 "stoker: WARNING: --trust-media-paths: local manifests may read ANY file this "
                 "user can read (media paths are not confined to the manifest's folder or "
                 "--media-root)\n");
  }
  return m;
}

void MediaFlags::apply_to(pipeline::LoaderConfig& c) const {
  c.media_roots = media_roots;
  c.trust_media_paths = trust_media_paths;
  c.allow_buckets = allow_buckets;
  c.max_object_bytes = max_object_bytes;
  c.max_record_bytes = max_record_bytes;
  c.io_deadline_ms = io_deadline_ms;
  c.imds = imds;
}

std::set<std::string> loader_value_flags() {
  std::set<std::string> v = {"model",    "tokenizer", "batch-size", "max-length", "io-threads",
                             "prefetch", "seed",      "epochs",     "arena-mb",   "worker-sched",
                             "max-tokens", "pack-format", "pack-window", "pack-align",
                             "position-rows", "exif", "small-images"};
  v.merge(media_value_flags());
  return v;
}

std::set<std::string> loader_repeat_flags() { return media_repeat_flags(); }

std::set<std::string> loader_switch_flags() {
  std::set<std::string> s = {"bf16", "packing", "token-budget", "truncate"};
  s.merge(media_switch_flags());
  return s;
}

Result<std::string> tokenizer_dir_from_flags(const Args& args, const model::ModelConfig& model) {
  std::string dir = args.get("tokenizer");
  if (!dir.empty()) return dir;
  return model::default_tokenizer_dir(model);
}

Result<pipeline::LoaderConfig> loader_config_from_flags(const Args& args,
                                                        const LoaderFlagDefaults& defaults) {
  constexpr int kIntMax = std::numeric_limits<int>::max();
  constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
  pipeline::LoaderConfig c;
  c.data = split_paths(args.positional());
  if (c.data.empty()) return invalid_argument("expected DATA.jsonl[,MORE.jsonl]");
  c.model = args.get("model", "qwen2.5-vl");
  c.tokenizer = args.get("tokenizer");
  STOKER_ASSIGN_OR_RETURN(c.batch_size, args.get_int<int>("batch-size", 8, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(c.max_length, args.get_int<std::int64_t>("max-length", 8192, 0, kI64Max));
  STOKER_ASSIGN_OR_RETURN(c.io_threads,
                          args.get_int<int>("io-threads", defaults.io_threads, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(c.prefetch, args.get_int<int>("prefetch", 4, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(c.seed, args.get_int<std::uint64_t>("seed", 0));
  STOKER_ASSIGN_OR_RETURN(c.epochs, args.get_int<std::int64_t>("epochs", 1, -1, kI64Max));
  if (c.epochs == 0) return invalid_argument("--epochs must be -1 (forever) or at least 1, got '0'");
  // MiB → bytes must not overflow, and the arena rounds up to pages: stay far below 2^64.
  STOKER_ASSIGN_OR_RETURN(std::int64_t arena_mb, args.get_int<std::int64_t>(
                                                     "arena-mb", defaults.arena_mb, 1, kMaxArenaMb));
  c.arena.bytes = static_cast<std::size_t>(arena_mb) << 20;
  if (args.has("bf16")) c.pixel_dtype = image::PixelDType::kBFloat16;
  image::ImageProcessorConfig compat;
  if (Status st = image::set_exif_option(args.get("exif", "apply"), &compat); !st.ok()) {
    return std::move(st).error().with_context("--exif");
  }
  if (Status st = image::set_small_images_option(args.get("small-images", "resize"), &compat);
      !st.ok()) {
    return std::move(st).error().with_context("--small-images");
  }
  c.apply_exif_orientation = compat.apply_exif_orientation;
  c.small_images = compat.resize_rules;
  auto sched = exec::parse_sched_class(args.get("worker-sched", "batch"));
  if (!sched.ok()) return std::move(sched).error().with_context("--worker-sched");
  c.worker_sched = *sched;
  STOKER_ASSIGN_OR_RETURN(c.packing, packing_from_flags(args));
  c.truncate = args.has("truncate");
  STOKER_ASSIGN_OR_RETURN(MediaFlags media, media_flags_from(args));
  media.apply_to(c);
  // Last: the tokenizer lookup reads files, and a bad flag should be reported first.
  // The model's family says where its tokenizer files are (model/family.h).
  STOKER_ASSIGN_OR_RETURN(const model::Family* family, model::family_for(c.model));
  if (c.tokenizer.empty()) {
    STOKER_ASSIGN_OR_RETURN(c.tokenizer, family->default_tokenizer_dir(c.model));
  }
  return c;
}

}  // namespace stoker::cli
