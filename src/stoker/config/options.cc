// THE option table: each option of every command declared once (schema.h says what each field
// means). Adding an option = an entry here (name, flag, type, range, default, help, commands,
// setter) + its use + its test; the CLI, Python, --help, the docstrings and the README table
// follow (config/README.md).
#include <algorithm>
#include <limits>
#include <string>

#include "stoker/config/schema.h"
#include "stoker/config/settings.h"

namespace stoker::config {
namespace {

constexpr std::int64_t kI32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// ---- bounds a machine can honour --------------------------------------------------------------

std::string cores_text(const Machine& m) {
  return std::to_string(m.cores) + (m.cores == 1 ? " core" : " cores");
}

// CPU pool threads: 4 per core (they also wait on page faults and locks), at least 64 so small
// machines can still be oversubscribed on purpose, never more than 1024.
Bound cpu_threads(const Machine& m) {
  const std::int64_t v = std::clamp<std::int64_t>(std::int64_t{4} * m.cores, 64, 1024);
  return {v, "4 x " + cores_text(m) + ", at least 64, at most 1024"};
}
// I/O threads mostly wait on storage: 16 per core, at least 256, never more than 4096.
Bound io_threads(const Machine& m) {
  const std::int64_t v = std::clamp<std::int64_t>(std::int64_t{16} * m.cores, 256, 4096);
  return {v, "16 x " + cores_text(m) + ", at least 256, at most 4096"};
}
Bound memory(const Machine& m) {
  return {m.memory_bytes, "this machine's memory, " + std::to_string(m.memory_bytes >> 20) + " MiB"};
}
// The batch arena's cap: at most 3/4 of the memory, so the trainer, the page cache and the
// engine's own buffers keep the rest. The cap is address space reserved at start (MAP_NORESERVE,
// batch/arena.cc; pages committed as batches touch them), so a bigger one no longer fails the
// mmap ("Internal: mmap: Cannot allocate memory" before issue #22) — but a run may fill it.
Bound arena_memory(const Machine& m) {
  const std::int64_t v = m.memory_bytes / 4 * 3;
  return {v, "3/4 of this machine's memory, " + std::to_string(v >> 20) + " MiB"};
}
// A trace event costs ~60 bytes in memory (obs/trace.h); allow half the memory at most.
Bound trace_events(const Machine& m) {
  return {std::max<std::int64_t>(1, m.memory_bytes / 128), "half this machine's memory at ~64 B per event"};
}

// ---- choices ----------------------------------------------------------------------------------

constexpr std::string_view kPaddings[] = {"longest", "max_length"};
constexpr std::string_view kDTypes[] = {"float32", "bfloat16"};
constexpr std::string_view kFinishes[] = {"cpu", "device"};
constexpr std::string_view kModes[] = {"serial", "concurrent", "prefetch"};
constexpr std::string_view kScheds[] = {"batch", "idle", "normal"};
constexpr std::string_view kFormats[] = {"hf", "megatron"};
constexpr std::string_view kExif[] = {"apply", "ignore"};
constexpr std::string_view kSmall[] = {"resize", "refuse"};
constexpr std::string_view kTimeIndex[] = {"float", "int"};
constexpr std::string_view kRoles[] = {"receiver", "worker"};
constexpr std::string_view kWires[] = {"float", "uint8", "encoded"};

// The commands that make batches, and those that only read data (inspect reads it too).
constexpr Commands kL = kLoaderCommands;
constexpr Commands kAll = kLoaderCommands | kInspect;
constexpr Commands kMedia = kAll | kRender;  // what one record may read: render applies it too
constexpr Commands kRunLike = kRun | kCluster;                     // run's loop
constexpr Commands kServeLike = kServe | kCluster | kPyServe;       // the node server
constexpr Commands kObserved = kRun | kServe | kCluster | kPyLoader | kPyServe;

#define SET(expr) [](Settings& s, const Value& v) { expr; }

const OptionSpec kOptions[] = {
    // ---- data and model
    {.name = "data", .flag = "DATA", .kind = Kind::kList, .commands = kAll, .group = "data",
     .help = "JSONL manifests (local paths, file://, s3://, http(s)://); several are read as one "
             "dataset, in order (CLI: positional arguments, one file each)",
     .positional = true, .set = SET(s.loader.data = v.list)},
    {.name = "model", .flag = "model", .kind = Kind::kPath, .commands = kAll, .group = "data",
     .help = "qwen2-vl | qwen2.5-vl | qwen3-vl | qwen2.5-omni | qwen2-audio | a Hugging Face "
             "model folder (its stoker.json may set the options marked 'model folder')",
     .def = model::kDefaultModel, .set = SET(s.loader.model = v.s)},
    {.name = "tokenizer", .flag = "tokenizer", .kind = Kind::kPath, .commands = kL,
     .group = "data",
     .help = "folder with tokenizer.json (default: the model folder; for a preset the Qwen "
             "tokenizer installed with stoker)",
     .nullable = true, .set = SET(s.loader.tokenizer = v.s)},
    {.name = "chat_template", .flag = "chat-template", .kind = Kind::kText,
     .commands = kL | kRender,
     .group = "data",
     .help = "a named chat template of the model folder (tokenizer_config.json's list, "
             "additional_chat_templates/NAME.jinja; default: transformers' choice)",
     .nullable = true, .model_folder = true, .set = SET(s.loader.chat_template = v.s)},
    {.name = "chat_template_kwargs", .flag = "chat-template-kwargs", .kind = Kind::kText,
     .commands = kL | kRender, .group = "data",
     .help = "template variables for every record, a JSON object, e.g. "
             "'{\"enable_thinking\": false}' (Python: also a dict); a record's own "
             "\"chat_template_kwargs\" win",
     .nullable = true, .model_folder = true, .set = SET(s.loader.chat_template_kwargs = v.s)},
    // ---- batches
    {.name = "batch_size", .flag = "batch-size", .kind = Kind::kInt, .commands = kL,
     .group = "batches", .help = "samples per batch", .def = "8", .lo = 1, .hi = 65536,
     .set = SET(s.loader.batch_size = static_cast<int>(v.i))},
    {.name = "max_length", .flag = "max-length", .kind = Kind::kInt, .commands = kL,
     .group = "batches", .help = "samples longer than this many tokens fail, reported (0: no limit)",
     .def = "8192", .lo = 0, .hi = kI32, .set = SET(s.loader.max_length = v.i)},
    {.name = "padding", .flag = "pad-to-max", .kind = Kind::kChoice, .commands = kL,
     .group = "batches",
     .help = "longest: pad each batch to its longest sample; max_length: to max_length (CLI: "
             "--pad-to-max)",
     .def = "longest", .choices = kPaddings, .switch_sets = "max_length",
     .set = SET(s.loader.padding = v.s == "max_length" ? pipeline::Padding::kFixed
                                                      : pipeline::Padding::kLongest)},
    {.name = "pixel_dtype", .flag = "bf16", .kind = Kind::kChoice, .commands = kL,
     .group = "batches",
     .help = "pixel_values dtype (CLI: --bf16 for bfloat16; Python also takes torch dtypes)",
     .def = "float32", .choices = kDTypes, .switch_sets = "bfloat16",
     .set = SET(s.loader.pixel_dtype = v.s == "bfloat16" ? image::PixelDType::kBFloat16
                                                        : image::PixelDType::kFloat32)},
    {.name = "finish", .flag = "finish", .kind = Kind::kChoice, .commands = kL,
     .group = "batches",
     .help = "where pixels are normalised: cpu (batches hold pixel_values) | device (batches hold "
             "each image's resized uint8 RGB as it is, pixel_values_uint8 [+ _videos], and the "
             "value tables; stoker.finish(batch, device) patchifies and builds pixel_values "
             "there, bit-identical; "
             "~8x fewer bytes per batch)",
     .def = "cpu", .choices = kFinishes,
     .set = SET(s.loader.finish = v.s == "device" ? pipeline::Finish::kDevice
                                                 : pipeline::Finish::kCpu)},
    {.name = "seed", .flag = "seed", .kind = Kind::kUInt, .commands = kL, .group = "batches",
     .help = "order seed", .def = "0", .set = SET(s.loader.seed = v.u)},
    {.name = "epochs", .flag = "epochs", .kind = Kind::kInt, .commands = kL, .group = "batches",
     .help = "passes over the data", .def = "1", .lo = 1, .hi = kI64, .also = -1,
     .also_means = "forever", .set = SET(s.loader.epochs = v.i)},
    {.name = "rank", .flag = "rank", .kind = Kind::kInt, .commands = kRun | kPyLoader,
     .group = "batches",
     .help = "this rank (with world_size; default: torchrun / Open MPI / Slurm variables, "
             "else 0 of 1)",
     .lo = 0, .hi = kI32, .nullable = true, .set = SET(s.loader.rank.rank = static_cast<int>(v.i))},
    {.name = "world_size", .flag = "world-size", .kind = Kind::kInt,
     .commands = kRun | kPyLoader, .group = "batches", .help = "ranks of the job (with rank)",
     .lo = 1, .hi = kI32, .nullable = true,
     .set = SET(s.loader.rank.world_size = static_cast<int>(v.i))},
    {.name = "local_rank", .kind = Kind::kInt, .commands = kPyLoader, .group = "batches",
     .help = "this rank on its node (with local_world_size)", .lo = 0, .hi = kI32,
     .nullable = true, .set = SET(s.loader.rank.local_rank = static_cast<int>(v.i))},
    {.name = "local_world_size", .kind = Kind::kInt, .commands = kPyLoader, .group = "batches",
     .help = "ranks on this node (with local_rank)", .lo = 1, .hi = kI32, .nullable = true,
     .set = SET(s.loader.rank.local_world_size = static_cast<int>(v.i))},
    {.name = "mode", .flag = "mode", .kind = Kind::kChoice, .commands = kRunLike | kPyLoader,
     .group = "batches",
     .help = "serial | concurrent (on demand in next()) | prefetch (background producer)",
     .def = "prefetch", .choices = kModes,
     .set = SET(s.loader.mode = v.s == "serial"       ? pipeline::Mode::kSerial
                                : v.s == "concurrent" ? pipeline::Mode::kConcurrent
                                                      : pipeline::Mode::kPrefetch)},
    // ---- threads and memory
    {.name = "threads", .flag = "threads", .kind = Kind::kInt, .commands = kL,
     .group = "threads and memory",
     .help = "CPU threads (0: all cores); serve: for all ranks together, split among them",
     .def = "0", .lo = 0, .hi = 1024, .hi_for = cpu_threads,
     .hi_rule = "4 x cores, at least 64", .set = SET(s.loader.threads = static_cast<int>(v.i))},
    {.name = "io_threads", .flag = "io-threads", .kind = Kind::kInt, .commands = kL,
     .group = "threads and memory", .help = "record reads and media fetches, per rank",
     .def = "4", .def_serve = "2", .lo = 1, .hi = 4096, .hi_for = io_threads,
     .hi_rule = "16 x cores, at least 256",
     .set = SET(s.loader.io_threads = static_cast<int>(v.i))},
    {.name = "prefetch", .flag = "prefetch", .kind = Kind::kInt, .commands = kL,
     .group = "threads and memory",
     .help = "ready batches kept ahead (at most one per 64 KiB of arena)", .def = "4", .lo = 1,
     .hi = 1024, .set = SET(s.loader.prefetch = static_cast<int>(v.i))},
    {.name = "sample_window", .flag = "sample-window", .kind = Kind::kInt,
     .commands = kRunLike | kPyLoader, .group = "threads and memory",
     .help = "samples in flight, finished or not (0: 2 x batch x (prefetch + 1); at most one "
             "per 16 KiB of arena)",
     .def = "0", .lo = 0, .hi = 65536, .set = SET(s.loader.window = static_cast<int>(v.i))},
    {.name = "fetch_bytes_in_flight", .flag = "fetch-bytes-in-flight", .kind = Kind::kBytes,
     .commands = kL, .group = "threads and memory", .help = "media bytes being fetched, at most",
     .def = "256M", .lo = 1, .hi = kI64, .hi_for = memory, .hi_rule = "the memory",
     .set = SET(s.loader.fetch_bytes_in_flight = v.i)},
    {.name = "arena_bytes", .flag = "arena-mb", .kind = Kind::kBytes, .commands = kL,
     .group = "threads and memory",
     .help = "batch memory cap per rank (CLI: --arena-mb in MiB; Python also arena_mb, in MiB): "
             "address space reserved, the memory bound; the run uses (prefetch + 2) x its "
             "largest batch + slack of it; the cap bounds prefetch",
     .def = "1G", .def_serve = "512M", .lo = 4096, .hi = kI64, .hi_for = arena_memory,
     .hi_rule = "3/4 of the memory",
     .cli_unit = kMiB, .unit_name = "arena_mb",
     .set = SET(s.loader.arena.bytes = static_cast<std::size_t>(v.i))},
    {.name = "arena_shared", .kind = Kind::kBool, .commands = kPyLoader,
     .group = "threads and memory",
     .help = "a memfd arena another process may map (serving sets it itself)", .def = "false",
     .set = SET(s.loader.arena.shared = v.b)},
    {.name = "worker_sched", .flag = "worker-sched", .kind = Kind::kChoice, .commands = kL,
     .group = "threads and memory",
     .help = "scheduling class of the loader's threads: batch (they never preempt the "
             "trainer's thread), idle (only spare CPU), normal",
     .def = "batch", .choices = kScheds, .set = SET(s.loader.worker_sched =
        v.s == "idle" ? exec::SchedClass::kIdle
        : v.s == "normal" ? exec::SchedClass::kNormal : exec::SchedClass::kBatch)},
    // ---- failed samples
    {.name = "strict", .flag = "strict", .kind = Kind::kBool, .commands = kL, .group = "errors",
     .help = "stop at the first failed sample", .def = "false",
     .set = SET(s.loader.errors.strict = v.b)},
    {.name = "max_errors", .flag = "max-errors", .kind = Kind::kInt, .commands = kL,
     .group = "errors", .help = "stop when more samples than this failed (default: no limit)",
     .lo = 0, .hi = kI64, .nullable = true, .set = SET(s.loader.errors.max_errors = v.i)},
    {.name = "max_error_rate", .flag = "max-error-rate", .kind = Kind::kNumber, .commands = kL,
     .group = "errors",
     .help = "failure budget: stop when more than this share of the run's samples failed, "
             "checked once 100 samples were seen (min_seen) and again at the end of the data "
             "over all of them, however few (1 failed of 5 = 20% > 0.1: the run ends with an "
             "error, DataLoss; 1 never stops)",
     .def = "0.1", .dlo = 0, .dhi = 1, .set = SET(s.loader.errors.max_error_rate = v.d)},
    {.name = "min_seen", .flag = "min-seen", .kind = Kind::kInt, .commands = kL,
     .group = "errors", .help = "samples seen before max_error_rate applies", .def = "100",
     .lo = 0, .hi = kI64, .set = SET(s.loader.errors.min_seen = v.i)},
    {.name = "error_report", .flag = "error-report", .kind = Kind::kPath,
     .commands = kRunLike | kPyLoader, .group = "errors",
     .help = "a JSON line per failed sample (sample, file, line, stage, code, reason)",
     .nullable = true, .output = Output::kDiagnostic,
     .set = SET(s.loader.errors.report_path = v.s)},
    // ---- media and I/O
    {.name = "media_root", .flag = "media-root", .kind = Kind::kList, .commands = kMedia,
     .group = "media and I/O",
     .help = "a local manifest may also read media under this folder (repeatable; default: "
             "only under the manifest's own folder); a remote manifest never reads local files",
     .set = SET(s.loader.media_roots = v.list)},
    {.name = "trust_media_paths", .flag = "trust-media-paths", .kind = Kind::kBool,
     .commands = kMedia, .group = "media and I/O",
     .help = "a local manifest may read ANY file this user can read (warns)", .def = "false",
     .set = SET(s.loader.trust_media_paths = v.b)},
    {.name = "allow_buckets", .flag = "allow-bucket", .kind = Kind::kList, .commands = kMedia,
     .group = "media and I/O",
     .help = "s3:// media may also come from this bucket (repeatable; '*': any; default: only "
             "the remote manifest's own bucket)",
     .set = SET(s.loader.allow_buckets = v.list)},
    {.name = "max_object_bytes", .flag = "max-object-bytes", .kind = Kind::kBytes,
     .commands = kMedia, .group = "media and I/O", .help = "largest media object read",
     .def = "256M", .lo = 1, .hi = kI64, .hi_for = memory, .hi_rule = "the memory",
     .set = SET(s.loader.max_object_bytes = v.i)},
    {.name = "max_record_bytes", .flag = "max-record-bytes", .kind = Kind::kBytes,
     .commands = kMedia, .group = "media and I/O", .help = "longest JSONL record (one line)",
     .def = "16M", .lo = 1, .hi = 4 * kGiB, .set = SET(s.loader.max_record_bytes = v.i)},
    {.name = "max_media_per_record", .flag = "max-media-per-record", .kind = Kind::kInt,
     .commands = kMedia, .group = "media and I/O",
     .help = "images + videos + video frames one record may reference (one fetch each); a "
             "record with more fails alone, at read, before any is fetched",
     .def = "1024", .lo = 1, .hi = 1 << 24, .set = SET(s.loader.max_media_per_record = v.i)},
    {.name = "max_manifest_bytes", .flag = "max-manifest-bytes", .kind = Kind::kBytes,
     .commands = kAll, .group = "media and I/O",
     .help = "largest remote manifest copied into the per-user cache (its claimed size and the "
             "bytes streamed; the cache's file system must also hold it + 64 MiB)",
     .def = "4G", .lo = 1, .hi = kI64, .set = SET(s.loader.max_manifest_bytes = v.i)},
    {.name = "io_deadline_ms", .flag = "io-deadline-ms", .kind = Kind::kInt, .commands = kMedia,
     .group = "media and I/O",
     .help = "retry window of one remote request, all attempts together", .def = "120000",
     .lo = 1, .hi = kI32, .nullable = true, .env = "STOKER_IO_DEADLINE_MS",
     .set = SET(s.loader.io_deadline_ms = v.i)},
    {.name = "io_max_attempts", .flag = "io-max-attempts", .kind = Kind::kInt, .commands = kMedia,
     .group = "media and I/O",
     .help = "attempts per remote request, a cap within the deadline (default: io's, 8; tests)",
     .lo = 1, .hi = 1000, .nullable = true, .env = "STOKER_IO_MAX_ATTEMPTS",
     .set = SET(s.loader.io_max_attempts = static_cast<int>(v.i))},
    {.name = "imds", .flag = "imds", .kind = Kind::kBool, .commands = kMedia,
     .group = "media and I/O",
     .help = "S3 credentials may come from the EC2 instance metadata service (otherwise only "
             "when $AWS_EC2_METADATA_SERVICE_ENDPOINT is set)",
     .def = "false", .set = SET(s.loader.imds = v.b)},
    {.name = "cache_dir", .flag = "cache-dir", .kind = Kind::kPath, .commands = kAll,
     .group = "media and I/O",
     .help = "where remote manifests are copied, a folder of this user's only (0700, verified "
             "on every use; default: $XDG_CACHE_HOME/stoker, else ~/.cache/stoker, else "
             "${TMPDIR:-/tmp}/stoker-cache-UID)",
     .nullable = true, .env = "STOKER_CACHE_DIR", .set = SET(s.loader.cache_dir = v.s)},
    {.name = "manifest_chunk_bytes", .flag = "manifest-chunk-bytes", .kind = Kind::kBytes,
     .commands = kAll, .group = "media and I/O",
     .help = "ranged GETs of a remote manifest (a test knob)", .def = "8M", .lo = 1, .hi = kGiB,
     .env = "STOKER_MANIFEST_CHUNK_BYTES", .set = SET(s.loader.manifest_chunk_bytes = v.i)},
    {.name = "fetch_blocking", .flag = "fetch-blocking", .kind = Kind::kBool, .commands = kL,
     .group = "media and I/O",
     .help = "one blocking read per I/O thread (the baseline the asynchronous fetch is "
             "measured against)",
     .def = "false", .env = "STOKER_FETCH_BLOCKING", .set = SET(s.loader.fetch_blocking = v.b)},
    // ---- packing and token budgets
    {.name = "packing", .flag = "packing", .kind = Kind::kBool, .commands = kL,
     .group = "packing",
     .help = "pack whole samples into one row of at most max_tokens per batch (best-fit "
             "decreasing within pack_window samples), no padding",
     .def = "false",
     .set = SET(if (v.b) s.loader.packing.batching = pipeline::Batching::kPack)},
    {.name = "token_budget", .flag = "token-budget", .kind = Kind::kBool, .commands = kL,
     .group = "packing", .help = "padded batches sized per step: size x longest <= max_tokens",
     .def = "false",
     .set = SET(if (v.b) s.loader.packing.batching = pipeline::Batching::kTokenBudget)},
    {.name = "max_tokens", .flag = "max-tokens", .kind = Kind::kInt, .commands = kL,
     .group = "packing", .help = "tokens per pack row / batch (default: max_length)", .lo = 1,
     .hi = kI32, .nullable = true, .set = SET(s.loader.packing.max_tokens = v.i)},
    {.name = "pack_format", .flag = "pack-format", .kind = Kind::kChoice, .commands = kL,
     .group = "packing",
     .help = "hf (varlen keyword arguments of a transformers forward) | megatron (THD row, "
             "shifted labels)",
     .def = "hf", .choices = kFormats, .nullable = true,
     .set = SET(s.loader.packing.format =
        v.s == "megatron" ? batch::PackFormat::kMegatron : batch::PackFormat::kHF)},
    {.name = "pack_window", .flag = "pack-window", .kind = Kind::kInt, .commands = kL,
     .group = "packing", .help = "samples planned together", .def = "1000", .lo = 1,
     .hi = 1 << 24, .set = SET(s.loader.packing.window = static_cast<int>(v.i))},
    {.name = "pack_align", .flag = "pack-align", .kind = Kind::kInt, .commands = kL,
     .group = "packing",
     .help = "megatron: each sub-sequence padded to a multiple of this (e.g. 2 x CP)", .def = "1",
     .lo = 1, .hi = 1 << 20, .nullable = true, .set = SET(s.loader.packing.align = v.i)},
    {.name = "position_rows", .flag = "position-rows", .kind = Kind::kInt, .commands = kL,
     .group = "packing",
     .help = "hf: 4 (text row + mRoPE, transformers >= 4.54) or 3 (mRoPE only, older)",
     .def = "4", .lo = 3, .hi = 4, .nullable = true,
     .set = SET(s.loader.packing.position_rows = static_cast<int>(v.i))},
    {.name = "truncate", .flag = "truncate", .kind = Kind::kBool, .commands = kL,
     .group = "packing",
     .help = "cut samples over max_length at whole turns instead of failing them",
     .def = "false", .set = SET(s.loader.truncate = v.b)},
    // ---- images and video
    {.name = "exif", .flag = "exif", .kind = Kind::kChoice, .commands = kAll, .group = "images",
     .help = "apply (the EXIF orientation, as transformers' load_image) | ignore (pixels as "
             "stored, as qwen-vl-utils and LLaMA-Factory open images)",
     .def = "apply", .choices = kExif, .model_folder = true,
     .set = SET(s.loader.apply_exif_orientation = v.s == "apply")},
    {.name = "small_images", .flag = "small-images", .kind = Kind::kChoice, .commands = kAll,
     .group = "images",
     .help = "resize (a side below the factor enlarged, transformers >= 4.53) | refuse (that "
             "sample fails, as <= 4.52)",
     .def = "resize", .choices = kSmall, .model_folder = true,
     .set = SET(s.loader.small_images = v.s == "refuse" ? image::SmartResizeRules::kRefuseBelowFactor
                                                       : image::SmartResizeRules::kCurrent)},
    {.name = "video_time_index", .flag = "video-time-index", .kind = Kind::kChoice,
     .commands = kL, .group = "images",
     .help = "Qwen2.5-VL video time index t x second_per_grid_t x tokens_per_second: float "
             "(in float32, then truncated: transformers 4.49, Qwen's fine-tuning code, vLLM) | "
             "int (second_per_grid_t cast to an integer first: later 4.5x releases to 4.57, and "
             "5.x until transformers PR 48669; README \"Video\")",
     .def = "float", .choices = kTimeIndex, .model_folder = true,
     .set = SET(s.loader.video_time_index = v.s == "int" ? batch::TimeIndexMode::kIntCastFirst
                                                        : batch::TimeIndexMode::kFloatThenTruncate)},
    // ---- observability
    {.name = "trace", .flag = "trace", .kind = Kind::kPath, .commands = kObserved,
     .group = "observability",
     .help = "write a Chrome/Perfetto trace-event JSON of the run here (ui.perfetto.dev)",
     .nullable = true, .output = Output::kDiagnostic, .set = SET(s.observe.trace_path = v.s)},
    {.name = "trace_sample", .flag = "trace-sample", .kind = Kind::kInt, .commands = kObserved,
     .group = "observability", .help = "keep the per-sample spans of every Nth sample only",
     .def = "1", .lo = 1, .hi = kI64, .set = SET(s.observe.trace.sample_every = v.i)},
    {.name = "trace_max_events", .flag = "trace-max-events", .kind = Kind::kInt,
     .commands = kObserved, .group = "observability",
     .help = "at most this many trace events (~110 B of JSON each); later ones are dropped",
     .def = "1000000", .lo = 1, .hi = kI64, .hi_for = trace_events,
     .hi_rule = "memory / 128",
     .set = SET(s.observe.trace.max_events = v.i)},
    {.name = "metrics_port", .flag = "metrics-port", .kind = Kind::kInt,
     .commands = kRun | kServe | kCluster | kPyServe, .group = "observability",
     .help = "serve Prometheus metrics at http://ADDR:PORT/metrics (0: any free port)", .lo = 0,
     .hi = 65535, .nullable = true, .set = SET(s.observe.metrics_port = static_cast<int>(v.i))},
    {.name = "metrics_addr", .flag = "metrics-addr", .kind = Kind::kText,
     .commands = kRun | kServe | kCluster | kPyServe, .group = "observability",
     .help = "address the metrics endpoint binds", .def = "127.0.0.1",
     .set = SET(s.observe.metrics_addr = v.s)},
    {.name = "report", .flag = "report", .kind = Kind::kPath, .commands = kRunLike,
     .group = "observability",
     .help = "write a run folder here and render it (PNG plots + index.html; `stoker report`)",
     .output = Output::kDiagnosticFolder, .set = SET(s.observe.report_dir = v.s)},
    // ---- stoker run
    {.name = "state_file", .flag = "state-file", .kind = Kind::kPath, .commands = kRunLike,
     .group = "run",
     .help = "after each batch, write the loader state here (atomically: a kill or a full disk "
             "leaves the previous state)",
     .output = Output::kData, .set = SET(s.run.state_file = v.s)},
    {.name = "resume", .flag = "resume", .kind = Kind::kPath, .commands = kRunLike,
     .group = "run",
     .help = "continue from the state in this file (an earlier --state-file); refused when it "
             "was written for another order (data, seed, batch size, packing, max_length, model)",
     .set = SET(s.run.resume_file = v.s)},
    {.name = "force_resume", .flag = "force-resume", .kind = Kind::kBool,
     .commands = kRunLike | kPyLoader, .group = "run",
     .help = "resume a state written for another order anyway (another seed, batch size, "
             "dataset, ...: samples may repeat or be skipped); says so",
     .def = "false", .set = SET(s.loader.force_resume = v.b)},
    {.name = "allow_spec_change", .flag = "allow-spec-change", .kind = Kind::kBool,
     .commands = kRunLike | kPyLoader, .group = "run",
     .help = "resume a mixture run whose mixture spec changed (weights, sources, sizes): the new "
             "global plan starts at the saved position (refused otherwise, naming the change)",
     .def = "false", .set = SET(s.loader.allow_spec_change = v.b)},
    {.name = "delivered_log", .flag = "delivered-log", .kind = Kind::kPath, .commands = kRunLike,
     .group = "run",
     .help = "append 'epoch step id id ...' per delivered batch (cut back on resume)",
     .output = Output::kData, .set = SET(s.run.delivered_log = v.s)},
    {.name = "batch_hashes", .flag = "batch-hashes", .kind = Kind::kPath, .commands = kRunLike,
     .group = "run", .help = "one FNV-1a hash of every batch's tensors per line",
     .output = Output::kData, .set = SET(s.run.batch_hashes = v.s)},
    {.name = "step_ms", .flag = "step-ms", .kind = Kind::kNumber, .commands = kRunLike,
     .group = "run", .help = "simulated trainer step: hold each batch this long", .def = "0",
     .dlo = 0, .dhi = 86'400'000, .set = SET(s.run.step_ms = v.d)},
    {.name = "limit_batches", .flag = "limit-batches", .kind = Kind::kInt, .commands = kRunLike,
     .group = "run", .help = "stop after this many batches", .lo = 0, .hi = kI64,
     .set = SET(s.run.limit_batches = v.i)},
    {.name = "pause_after_log_ms", .flag = "pause-after-log-ms", .kind = Kind::kNumber,
     .commands = kRunLike, .group = "run",
     .help = "test switch: sleep between logging a batch and saving the state", .def = "0",
     .dlo = 0, .dhi = 86'400'000, .set = SET(s.run.pause_after_log_ms = v.d)},
    {.name = "state_write_pause_ms", .flag = "state-write-pause-ms", .kind = Kind::kNumber,
     .commands = kRunLike, .group = "run",
     .help = "test switch: sleep halfway through writing the state file (the kill tests)",
     .def = "0", .dlo = 0, .dhi = 86'400'000, .set = SET(s.run.state_write_pause_ms = v.d)},
    {.name = "strict_outputs", .flag = "strict-outputs", .kind = Kind::kBool,
     .commands = kLoaderCommands, .group = "run",
     .help = "a failed write of a diagnostic output (trace, report, error report, summary JSON) "
             "fails the run (default: a warning naming the path)",
     .def = "false", .set = SET(s.loader.strict_outputs = v.b)},
    {.name = "quiet", .flag = "quiet", .kind = Kind::kBool, .commands = kRunLike | kServeLike,
     .group = "run", .help = "no progress lines (the summary, and serve's attach lines, stay)",
     .def = "false", .set = SET(s.run.quiet = v.b; s.serve.quiet = v.b)},
    {.name = "progress_s", .flag = "progress-s", .kind = Kind::kNumber,
     .commands = kRunLike | kServeLike, .group = "run",
     .help = "progress every this many seconds (0: none; run's default: 0.5 s redrawn on a "
             "terminal, 10 s lines otherwise)",
     .def_serve = "5", .dlo = 0, .dhi = 86400,
     .set = SET(s.run.progress_s = v.d; s.serve.progress_s = v.d)},
    // ---- the node server
    {.name = "socket", .flag = "socket", .kind = Kind::kPath, .commands = kServeLike,
     .group = "serve",
     .help = "Unix socket (default: $XDG_RUNTIME_DIR/stoker/stoker.sock or "
             "/tmp/stoker-$UID/stoker.sock); clients: STOKER_SERVER=PATH",
     .nullable = true, .set = SET(s.serve.socket = v.s)},
    {.name = "world_size", .flag = "world-size", .kind = Kind::kInt, .commands = kServeLike,
     .group = "serve", .help = "ranks of the job served, each its own shard", .def = "1",
     .lo = 1, .hi = 4096, .nullable = true, .env = "WORLD_SIZE",
     .set = SET(s.serve.world_size = static_cast<int>(v.i))},
    {.name = "window", .flag = "window", .kind = Kind::kInt, .commands = kServeLike,
     .group = "serve",
     .help = "unreleased batches one rank's process may hold; while it waits in next() the "
             "batch its loop is replacing does not count",
     .def = "4",
     .lo = 1, .hi = 64, .set = SET(s.serve.window = static_cast<int>(v.i))},
    {.name = "idle_timeout_s", .flag = "idle-timeout-s", .kind = Kind::kNumber,
     .commands = kServeLike, .group = "serve",
     .help = "stop (an error) when no process has been attached this long while ranks are "
             "unfinished (default: wait forever)",
     .dlo = 0, .dhi = 1e7, .nullable = true, .set = SET(s.serve.idle_timeout_s = v.d)},
    // ---- stoker cluster
    {.name = "receivers", .flag = "receivers", .kind = Kind::kInt, .commands = kCluster,
     .group = "cluster", .help = "world ranks 0..R-1 receive, the rest prepare samples",
     .def = "1", .lo = 1, .hi = 1 << 20, .set = SET(s.cluster.receivers = static_cast<int>(v.i))},
    {.name = "role", .flag = "role", .kind = Kind::kChoice, .commands = kCluster,
     .group = "cluster", .help = "MPMD instead of --receivers: this app context's role",
     .choices = kRoles, .set = SET(s.cluster.role = v.s)},
    {.name = "wire", .flag = "wire", .kind = Kind::kChoice, .commands = kCluster,
     .group = "cluster",
     .help = "float (finished pixel rows) | uint8 (resized pixels; the receiver normalises) | "
             "encoded (media bytes; the receiver decodes)",
     .def = "float", .choices = kWires, .set = SET(s.cluster.wire = v.s)},
    {.name = "receiver_threads", .flag = "receiver-threads", .kind = Kind::kInt,
     .commands = kCluster, .group = "cluster",
     .help = "CPU threads of the receivers (default: --threads)", .lo = 0, .hi = 1024,
     .hi_for = cpu_threads, .hi_rule = "4 x cores, at least 64",
     .set = SET(s.cluster.receiver_threads = static_cast<int>(v.i))},
    {.name = "receiver_prepare", .flag = "receiver-prepare", .kind = Kind::kInt,
     .commands = kCluster, .group = "cluster",
     .help = "threads on which a receiver with workers prepares samples too, in the loader's "
             "scheduling class, with the CPU receiving leaves (default: --receiver-threads; 0: it "
             "only receives)",
     .lo = 0, .hi = 1024, .hi_for = cpu_threads, .hi_rule = "4 x cores, at least 64",
     .set = SET(s.cluster.receiver_prepare = static_cast<int>(v.i))},
    {.name = "serve", .flag = "serve", .kind = Kind::kBool, .commands = kCluster,
     .group = "cluster",
     .help = "receivers run the node server (trainer ranks attach with "
             "stoker.Loader(connect=--socket)) instead of run's loop",
     .def = "false", .set = SET(s.cluster.serve = v.b)},
    {.name = "summary_json", .flag = "summary-json", .kind = Kind::kPath, .commands = kCluster,
     .group = "cluster",
     .help = "rank 0 writes samples/s, wait ratio, wire bytes and every rank's CPU here",
     .output = Output::kDiagnostic, .set = SET(s.cluster.summary_json = v.s)},
    // ---- stoker inspect
    {.name = "limit", .flag = "limit", .kind = Kind::kInt, .commands = kInspect,
     .group = "inspect", .help = "inspect only the first N records", .lo = 0, .hi = kI64,
     .set = SET(s.inspect.limit = v.i)},
    {.name = "json", .flag = "json", .kind = Kind::kBool, .commands = kInspect,
     .group = "inspect", .help = "one JSON object per image / error, then a summary",
     .def = "false", .set = SET(s.inspect.json = v.b)},
    // ---- Python's served mode (stoker.Loader(connect=...); read by the package itself)
    {.name = "connect", .kind = Kind::kText, .commands = kPyLoader, .group = "Python",
     .help = "take batches from a node server: True (the default socket) or its path; data "
             "and the pipeline options are then the server's",
     .nullable = true, .env = "STOKER_SERVER"},
    {.name = "connect_timeout_s", .kind = Kind::kNumber, .commands = kPyLoader,
     .group = "Python", .help = "served mode: how long to wait for the server", .def = "30",
     .dlo = 0, .dhi = 1e7},
    {.name = "server_uid", .kind = Kind::kInt, .commands = kPyLoader, .group = "Python",
     .help = "served mode: also trust a node server running as this uid (the client checks "
             "the server's SO_PEERCRED; default: only a server of this user's)",
     .lo = 0, .hi = 4294967294, .nullable = true, .env = "STOKER_SERVER_UID"},
    {.name = "resume_state", .kind = Kind::kState, .commands = kPyLoader, .group = "Python",
     .help = "served mode: this rank's saved state (a state_dict()); wins over the server's",
     .nullable = true},
};

#undef SET

}  // namespace

std::span<const OptionSpec> options() { return kOptions; }

}  // namespace stoker::config
