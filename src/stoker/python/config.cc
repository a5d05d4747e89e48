// Keyword options → pipeline::LoaderConfig. The package checks every option first
// (stoker/_options.py); this checks again — each value's type, then its range, before any
// narrowing cast — because _stoker can be called directly, and a wrapped int is a silently wrong
// config (defence in depth). Errors are InvalidArgument naming the option and the value.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "stoker/model/model_config.h"
#include "stoker/python/bindings.h"

namespace stoker::python {
namespace {

constexpr std::int64_t kI32 = std::numeric_limits<int>::max();
constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();
// The arena rounds up to pages and ftruncate()s an off_t: stay well below 2^63.
constexpr std::int64_t kMaxArenaBytes = std::int64_t{1} << 62;
constexpr std::int64_t kMaxRecordBytes = std::int64_t{4} << 30;  // LoaderConfig::validate's cap

// Every key make_config reads; anything else is an error (a typo must not be ignored).
const char* const kKnown[] = {
    "data", "model", "tokenizer", "batch_size", "max_length", "padding", "pixel_dtype", "seed",
    "epochs", "rank", "world_size", "local_rank", "local_world_size", "mode", "threads",
    "prefetch", "io_threads", "window", "fetch_bytes_in_flight", "arena_bytes", "arena_mb", "arena_shared",
    "worker_sched", "strict", "max_errors", "max_error_rate", "min_seen", "error_report",
    "media_root", "trust_media_paths", "allow_buckets", "max_object_bytes", "max_record_bytes",
    "io_deadline_ms", "imds", "packing", "token_budget", "max_tokens", "pack_format",
    "pack_window", "pack_align", "position_rows", "truncate", "exif", "small_images",
    "trace", "trace_sample", "trace_max_events"};

[[noreturn]] void bad(const std::string& key, const std::string& want, py::handle v) {
  std::string shown = py::repr(v).cast<std::string>();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  raise(invalid_argument("Loader: " + key + " must be " + want + ", got " + shown + " (" +
                         Py_TYPE(v.ptr())->tp_name + ")"));
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
  return "an int in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// An int (not a bool) in [lo, hi], read without overflow.
std::int64_t int_in(py::handle v, const std::string& key, std::int64_t lo, std::int64_t hi) {
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad(key, range_text(lo, hi), v);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0 || x < lo || x > hi) bad(key, range_text(lo, hi), v);
  return x;
}

std::uint64_t uint64_of(py::handle v, const std::string& key) {
  const std::string want = "an int in [0, 18446744073709551615]";
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad(key, want, v);
  const unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {  // negative or too large
    PyErr_Clear();
    bad(key, want, v);
  }
  return x;
}

double number_in(py::handle v, const std::string& key, double lo, double hi) {
  char want[64];
  std::snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
  if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()))) {
    bad(key, want, v);
  }
  const double x = PyFloat_AsDouble(v.ptr());
  if (PyErr_Occurred()) {  // an int too large for a double
    PyErr_Clear();
    bad(key, want, v);
  }
  if (!std::isfinite(x) || x < lo || x > hi) bad(key, want, v);
  return x;
}

bool flag(py::handle v, const std::string& key) {
  if (!PyBool_Check(v.ptr())) bad(key, "a bool", v);
  return v.ptr() == Py_True;
}

std::string text(py::handle v, const std::string& key) {
  if (!PyUnicode_Check(v.ptr())) bad(key, "a str", v);
  return v.cast<std::string>();
}

// A str, or a list/tuple of non-empty strs.
std::vector<std::string> texts(py::handle v, const std::string& key) {
  const char* want = "a str or a list of non-empty strs";
  if (PyUnicode_Check(v.ptr())) return {v.cast<std::string>()};
  if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) bad(key, want, v);
  std::vector<std::string> out;
  for (py::handle item : v) {
    if (!PyUnicode_Check(item.ptr())) bad(key, want, v);
    out.push_back(item.cast<std::string>());
    if (out.back().empty()) bad(key, want, v);
  }
  return out;
}

std::string default_tokenizer(const std::string& model) {
  model::ModelConfig m = unwrap(model::load_model(model));
  if (!m.folder.empty()) return {};  // the model folder has the tokenizer files
  return unwrap(model::default_tokenizer_dir(m));
}

void check_known(const py::dict& kw) {
  for (auto item : kw) {
    if (!PyUnicode_Check(item.first.ptr())) bad("an option name", "a str", item.first);
    const std::string key = item.first.cast<std::string>();
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) raise(invalid_argument("Loader: unknown option '" + key + "'"));
  }
}

// The options with a choice of names, and the rank fields.
void set_choices_and_ranks(const py::dict& kw, pipeline::LoaderConfig& c) {
  auto has = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  if (has("padding")) {
    std::string p = text(kw["padding"], "padding");
    if (p == "longest") c.padding = pipeline::Padding::kLongest;
    else if (p == "max_length") c.padding = pipeline::Padding::kFixed;
    else raise(invalid_argument("Loader: padding is 'longest' or 'max_length', not '" + p + "'"));
  }
  if (has("pixel_dtype")) {
    std::string d = text(kw["pixel_dtype"], "pixel_dtype");
    if (d == "float32") c.pixel_dtype = image::PixelDType::kFloat32;
    else if (d == "bfloat16") c.pixel_dtype = image::PixelDType::kBFloat16;
    else raise(invalid_argument("Loader: pixel_dtype is 'float32' or 'bfloat16', not '" + d + "'"));
  }
  if (has("exif")) {
    std::string e = text(kw["exif"], "exif");
    if (e != "apply" && e != "ignore") {
      raise(invalid_argument("Loader: exif is 'apply' or 'ignore', not '" + e + "'"));
    }
    c.apply_exif_orientation = e == "apply";
  }
  if (has("small_images")) {
    std::string v = text(kw["small_images"], "small_images");
    if (v == "resize") c.small_images = image::SmartResizeRules::kCurrent;
    else if (v == "refuse") c.small_images = image::SmartResizeRules::kRefuseBelowFactor;
    else raise(invalid_argument("Loader: small_images is 'resize' or 'refuse', not '" + v + "'"));
  }
  if (has("mode")) {
    std::string m = text(kw["mode"], "mode");
    if (m == "serial") c.mode = pipeline::Mode::kSerial;
    else if (m == "concurrent") c.mode = pipeline::Mode::kConcurrent;
    else if (m == "prefetch") c.mode = pipeline::Mode::kPrefetch;
    else raise(invalid_argument("Loader: mode is serial|concurrent|prefetch, not '" + m + "'"));
  }
  if (has("worker_sched")) {
    auto sched = exec::parse_sched_class(text(kw["worker_sched"], "worker_sched"));
    if (!sched.ok()) raise(std::move(sched).error().with_context("Loader: worker_sched"));
    c.worker_sched = *sched;
  }
  auto rank_field = [&](const char* k, std::int64_t lo, std::optional<int>& field) {
    if (has(k)) field = static_cast<int>(int_in(kw[k], k, lo, kI32));
  };
  rank_field("rank", 0, c.rank.rank);
  rank_field("world_size", 1, c.rank.world_size);
  rank_field("local_rank", 0, c.rank.local_rank);
  rank_field("local_world_size", 1, c.rank.local_world_size);
  if (c.rank.rank.has_value() != c.rank.world_size.has_value()) {
    raise(invalid_argument("Loader: rank and world_size go together"));
  }
}

// packing / token_budget and the options that only mean something with one of them.
void set_packing(const py::dict& kw, pipeline::LoaderConfig& c) {
  auto has = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  const bool pack = has("packing") && flag(kw["packing"], "packing");
  const bool budget = has("token_budget") && flag(kw["token_budget"], "token_budget");
  if (pack && budget) raise(invalid_argument("Loader: packing and token_budget exclude each other"));
  c.packing.batching = pack     ? pipeline::Batching::kPack
                       : budget ? pipeline::Batching::kTokenBudget
                                : pipeline::Batching::kFixed;
  for (const char* k : {"max_tokens", "pack_format", "pack_window", "pack_align", "position_rows"}) {
    if (has(k) && !pack && !budget) {
      raise(invalid_argument(std::string("Loader: ") + k + " needs packing=True or token_budget=True"));
    }
  }
  if (has("max_tokens")) c.packing.max_tokens = int_in(kw["max_tokens"], "max_tokens", 1, kI32);
  if (has("pack_window")) c.packing.window = static_cast<int>(int_in(kw["pack_window"], "pack_window", 1, 1 << 24));
  if (has("position_rows")) c.packing.position_rows = static_cast<int>(int_in(kw["position_rows"], "position_rows", 3, 4));
  if (has("pack_format")) {
    const std::string f = text(kw["pack_format"], "pack_format");
    if (f == "hf") c.packing.format = batch::PackFormat::kHF;
    else if (f == "megatron") c.packing.format = batch::PackFormat::kMegatron;
    else raise(invalid_argument("Loader: pack_format is 'hf' or 'megatron', not '" + f + "'"));
  }
  if (has("pack_align")) {
    if (c.packing.format != batch::PackFormat::kMegatron) {
      raise(invalid_argument("Loader: pack_align is for pack_format='megatron'"));
    }
    c.packing.align = int_in(kw["pack_align"], "pack_align", 1, 1 << 20);
  }
}

pipeline::LoaderConfig make_config(const py::dict& kw) {
  check_known(kw);
  pipeline::LoaderConfig c;
  auto has = [&](const char* k) { return kw.contains(k) && !kw[k].is_none(); };
  auto i64 = [&](const char* k, std::int64_t lo, std::int64_t hi) {
    return int_in(kw[k], k, lo, hi);
  };
  auto i32 = [&](const char* k, std::int64_t lo) { return static_cast<int>(i64(k, lo, kI32)); };
  auto str = [&](const char* k) { return text(kw[k], k); };
  auto strs = [&](const char* k) { return texts(kw[k], k); };
  auto yes = [&](const char* k) { return flag(kw[k], k); };
  if (has("data")) c.data = strs("data");
  if (has("model")) c.model = str("model");
  if (has("tokenizer")) c.tokenizer = str("tokenizer");
  if (has("batch_size")) c.batch_size = i32("batch_size", 1);
  if (has("max_length")) c.max_length = i64("max_length", 0, kI64);
  if (has("seed")) c.seed = uint64_of(kw["seed"], "seed");
  if (has("epochs")) c.epochs = i64("epochs", -1, kI64);  // 0: validate() says why
  if (has("threads")) c.threads = i32("threads", 0);
  if (has("prefetch")) c.prefetch = i32("prefetch", 1);
  if (has("io_threads")) c.io_threads = i32("io_threads", 1);
  if (has("window")) c.window = i32("window", 0);
  if (has("fetch_bytes_in_flight")) c.fetch_bytes_in_flight = i64("fetch_bytes_in_flight", 1, kI64);
  if (has("arena_bytes")) {
    c.arena.bytes = static_cast<std::size_t>(i64("arena_bytes", 4096, kMaxArenaBytes));
  }
  // arena_mb: the cap in MiB, as the CLI's --arena-mb; wins over arena_bytes.
  if (has("arena_mb")) {
    c.arena.bytes = static_cast<std::size_t>(i64("arena_mb", 1, kMaxArenaBytes >> 20)) << 20;
  }
  if (has("arena_shared")) c.arena.shared = yes("arena_shared");
  if (has("strict")) c.errors.strict = yes("strict");
  if (has("max_errors")) c.errors.max_errors = i64("max_errors", -1, kI64);  // -1: no limit
  if (has("max_error_rate")) {
    c.errors.max_error_rate = number_in(kw["max_error_rate"], "max_error_rate", 0, 1);
  }
  if (has("min_seen")) c.errors.min_seen = i64("min_seen", 0, kI64);
  if (has("error_report")) c.errors.report_path = str("error_report");
  if (has("media_root")) c.media_roots = strs("media_root");
  if (has("trust_media_paths")) c.trust_media_paths = yes("trust_media_paths");
  if (has("allow_buckets")) c.allow_buckets = strs("allow_buckets");
  if (has("max_object_bytes")) c.max_object_bytes = i64("max_object_bytes", 1, kI64);
  if (has("max_record_bytes")) c.max_record_bytes = i64("max_record_bytes", 1, kMaxRecordBytes);
  if (has("io_deadline_ms")) c.io_deadline_ms = i64("io_deadline_ms", 1, kI32);
  if (has("imds")) c.imds = yes("imds");
  if (has("truncate")) c.truncate = yes("truncate");
  if (has("trace")) c.trace_path = str("trace");
  if (has("trace_sample")) c.trace.sample_every = i64("trace_sample", 1, kI64);
  if (has("trace_max_events")) c.trace.max_events = i64("trace_max_events", 1, kI64);
  if ((has("trace_sample") || has("trace_max_events")) && c.trace_path.empty()) {
    raise(invalid_argument("Loader: trace_sample and trace_max_events need trace=FILE"));
  }
  set_choices_and_ranks(kw, c);
  set_packing(kw, c);
  return c;
}

}  // namespace

pipeline::LoaderConfig loader_config(const py::dict& kw) {
  pipeline::LoaderConfig c = make_config(kw);
  if (c.tokenizer.empty()) c.tokenizer = default_tokenizer(c.model);
  return c;
}

}  // namespace stoker::python
