// _stoker: the pybind11 extension under the thin `stoker` package. It exposes a raw loader whose
// next() returns one DLPack capsule per tensor (the package turns them into torch tensors), the
// loader state and stats as plain values, and the arena's address for zero-copy tests.
// Every call that can block (create, next, state ops, close/destruction) releases the GIL; the
// engine's threads never take it. Errors become the package's exception classes through one table
// (install_error_classes; see README.md), each carrying `.code`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "stoker/base/hash.h"
#include "stoker/base/option_name.h"
#include "stoker/base/printable.h"
#include "stoker/base/result.h"
#include "stoker/base/version.h"
#include "stoker/pipeline/loader.h"
#include "stoker/python/bindings.h"
#include "stoker/python/dlpack_export.h"

namespace py = pybind11;

namespace stoker::python {
std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool python_signal_pending() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

namespace {

py::dict& error_classes() {
  static auto* d = new py::dict();  // leaked on purpose: outlives interpreter teardown order
  return *d;
}

}  // namespace

py::object batch_tuple(const std::shared_ptr<SharedBatch>& b, std::int64_t ready_ns) {
  py::dict tensors;
  for (const batch::TensorView& v : b->layout.tensors) {
    PyObject* cap = make_capsule(b, v);
    if (cap == nullptr) throw py::error_already_set();
    tensors[py::str(v.name)] = py::reinterpret_steal<py::object>(cap);
  }
  return py::make_tuple(tensors, b->layout.step, b->layout.epoch, ready_ns);
}

namespace {

// ---- the raw loader --------------------------------------------------------------------------

py::dict state_to_dict(const pipeline::LoaderState& s) {
  py::dict d;
  d["epoch"] = s.epoch;
  d["position"] = s.position;
  d["errors"] = s.errors;
  if (s.plan != 0) {  // packing: the window's units consumed, and the plan's id
    d["packs"] = s.packs;
    d["plan"] = s.plan;
  }
  if (!s.mix.empty()) d["mix"] = s.mix;  // a mixture's global plan (plan_schedule.h)
  if (!s.fingerprint.empty()) {  // what decided the order (pipeline/fingerprint.h)
    py::dict fp;
    for (const auto& [name, value] : s.fingerprint.fields) fp[py::str(name)] = value;
    d["fingerprint"] = fp;
  }
  return d;
}

// A state dict is untrusted input like any option (issue #28): the package checks it first
// (stoker/_options.py check_state); this is the same check again, for callers of _stoker.
// InvalidArgument naming the key and the value; nothing else escapes.
[[noreturn]] void bad_state(const std::string& key, const std::string& want, py::handle v) {
  std::string shown = py::repr(v).cast<std::string>();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  raise(invalid_argument("load_state_dict: " + key + " must be " + want + ", got " + shown + " (" +
                         Py_TYPE(v.ptr())->tp_name + ")"));
}

std::uint64_t state_number(const py::dict& d, const char* key, std::uint64_t hi) {
  const std::string name = std::string("state['") + key + "']";
  const std::string want = "an int in [0, " + std::to_string(hi) + "]";
  py::handle v = d[key];
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad_state(name, want, v);
  const unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {  // negative or too large
    PyErr_Clear();
    bad_state(name, want, v);
  }
  if (x > hi) bad_state(name, want, v);
  return x;
}

}  // namespace

pipeline::LoaderState state_from_dict(const py::dict& d) {
  static const char* const kKeys[] = {"epoch", "position", "errors", "packs", "plan", "fingerprint", "mix"};
  for (auto item : d) {
    bool known = false;
    if (PyUnicode_Check(item.first.ptr())) {
      const std::string k = item.first.cast<std::string>();
      for (const char* want : kKeys) known = known || k == want;
    }
    if (!known) bad_state("a key", "one of epoch, position, errors, packs, plan, fingerprint", item.first);
  }
  for (const char* required : {"epoch", "position"}) {
    if (!d.contains(required)) {
      raise(invalid_argument(std::string("load_state_dict: state['") + required + "'] is missing"));
    }
  }
  constexpr std::uint64_t kU64 = ~std::uint64_t{0};
  pipeline::LoaderState s;
  s.epoch = state_number(d, "epoch", kU64);
  s.position = state_number(d, "position", kU64);
  if (d.contains("errors")) s.errors = state_number(d, "errors", kU64);
  if (d.contains("packs")) s.packs = state_number(d, "packs", kU64);
  if (d.contains("plan")) s.plan = static_cast<std::uint32_t>(state_number(d, "plan", 0xffffffffu));
  if (d.contains("packs") != d.contains("plan") || (d.contains("plan") && s.plan == 0)) {
    raise(invalid_argument("load_state_dict: state['packs'] and state['plan'] go together, plan "
                           "> 0 (a packing state)"));
  }
  if (d.contains("mix")) {  // checked as the state file's field is (loader_state.cc)
    py::handle m = d["mix"];
    if (!PyUnicode_Check(m.ptr())) bad_state("state['mix']", "a str from state_dict()", m);
    const std::string text = m.cast<std::string>();
    auto parsed = pipeline::LoaderState::parse("stoker-state v1 epoch=0 position=0 mix=" + text);
    if (!parsed.ok() || parsed->mix != text) bad_state("state['mix']", "a str from state_dict() (0-9 a-f w . _)", m);
    s.mix = text;
  }
  if (d.contains("fingerprint")) {
    py::handle fp = d["fingerprint"];
    const std::string want = "a dict of at most " +
                             std::to_string(pipeline::Fingerprint::kMaxFields) +
                             " str names (a-z, _) to str values (A-Z a-z 0-9 . _ : / + -, at most " +
                             std::to_string(pipeline::Fingerprint::kMaxValue) + ")";
    if (!PyDict_Check(fp.ptr()) || PyDict_Size(fp.ptr()) > static_cast<Py_ssize_t>(
                                        pipeline::Fingerprint::kMaxFields)) {
      bad_state("state['fingerprint']", want, fp);
    }
    for (auto item : py::reinterpret_borrow<py::dict>(fp)) {
      if (!PyUnicode_Check(item.first.ptr()) || !PyUnicode_Check(item.second.ptr())) {
        bad_state("state['fingerprint']", want, fp);
      }
      std::string k = item.first.cast<std::string>(), v = item.second.cast<std::string>();
      if (!pipeline::Fingerprint::valid_name(k) || !pipeline::Fingerprint::valid_value(v)) {
        bad_state("state['fingerprint']['" + k.substr(0, 40) + "']", want, item.second);
      }
      s.fingerprint.fields.emplace_back(std::move(k), std::move(v));
    }
  }
  return s;
}

namespace {

class RawLoader {
 public:
  explicit RawLoader(const py::dict& kw) {
    pipeline::LoaderConfig c = loader_config(kw);
    py::gil_scoped_release nogil;
    loader_ = unwrap(pipeline::Loader::create(c));
    batch_size_ = c.batch_size;
  }
  ~RawLoader() { close(); }

  // Engine threads are joined here; they never need the GIL, so release it while waiting.
  void close() {
    if (!loader_) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release nogil;
      loader_.reset();
    } else {
      loader_.reset();
    }
  }

  // None at the end; else (dict name → capsule, step, epoch, ready_ns): ready_ns is when the C++
  // batch was in this thread's hands (steady clock, comparable with monotonic_ns()).
  py::object next() {
    pipeline::Loader& l = live();
    std::optional<Result<std::optional<pipeline::Batch>>> r;
    std::int64_t ready_ns = 0;
    bool interrupted = false;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(next_mu_);  // the engine's next() is for one consumer thread
      const pipeline::LoaderState before = l.state();
      // Ctrl-C while waiting: the handlers run within ~50 ms; the batch stays for the next call.
      r.emplace(l.next([&] { return interrupted = python_signal_pending(); }, kSignalPoll));
      if (!interrupted) before_last_ = before;
      ready_ns = monotonic_ns();
    }
    if (interrupted) throw py::error_already_set();  // KeyboardInterrupt (or what a handler raised)
    std::optional<pipeline::Batch> b = unwrap(std::move(*r));
    if (!b) return py::none();
    auto shared = std::make_shared<SharedBatch>();
    shared->layout = b->layout();
    shared->base = b->valid() ? l.arena().base() : nullptr;
    shared->keep = std::make_shared<pipeline::Batch>(std::move(*b));
    return batch_tuple(shared, ready_ns);
  }

  py::dict state() {
    pipeline::LoaderState s;
    {
      py::gil_scoped_release nogil;
      s = live().state();
    }
    return state_to_dict(s);
  }
  py::dict state_before_last() const { return state_to_dict(before_last_); }

  // Returns the resume note ("" or a warning the package shows: a forced resume, a state
  // without a fingerprint).
  std::string resume(const py::dict& d) {
    pipeline::LoaderState s = state_from_dict(d);
    Status st;
    std::string note;
    {
      py::gil_scoped_release nogil;
      st = live().resume(s);
      if (st.ok()) {
        note = live().resume_note();
        s = live().state();
      }
    }
    if (!st.ok()) check(Status(Error(st.error()).with_context("load_state_dict")));
    before_last_ = s;
    return note;
  }

  py::dict stats() {
    pipeline::LoaderStats s;
    {
      py::gil_scoped_release nogil;
      s = live().stats();
    }
    py::dict d;
    d["batches"] = s.batches;
    d["samples"] = s.samples;
    d["failed"] = s.failed;
    if (!s.sources.empty()) {  // a mixture: per source, planned (job) vs delivered / failed (rank)
      py::list sources;
      for (const pipeline::SourceStats& src : s.sources) {
        py::dict e;
        e["name"] = src.name;
        e["share"] = src.share;
        e["records"] = src.records;
        e["first_id"] = src.first_id;
        e["subflavors"] = py::module_::import("json").attr("loads")(src.subflavors);
        e["planned"] = src.planned;
        e["delivered"] = src.delivered;
        e["failed"] = src.failed;
        sources.append(std::move(e));
      }
      d["sources"] = std::move(sources);
    }
    d["wait_s"] = s.wait_s;
    d["elapsed_s"] = s.elapsed_s;
    d["wait_ratio"] = s.wait_ratio();
    d["first_batch_s"] = s.first_batch_s;
    d["arena_wait_s"] = s.arena_wait_s;
    d["sample_wait_s"] = s.sample_wait_s;
    d["emit_s"] = s.emit_s;
    d["fetch_budget_wait_s"] = s.fetch_budget_wait_s;
    d["limiter"] = pipeline::describe_limiter(s);
    d["chat_template"] = s.chat_template;
    d["sample_build_s"] = s.sample_build_s;
    d["samples_built"] = s.samples_built;
    d["arena_peak_bytes"] = s.arena_peak_bytes;
    // The arena's size: its cap (arena_bytes / arena_mb), what the run plans to use, and why.
    d["arena_capacity_bytes"] = s.arena_capacity_bytes;
    d["arena_planned_bytes"] = s.arena_planned_bytes;
    d["arena_plan"] = s.arena_plan;
    d["fetch_peak_bytes"] = s.fetch_peak_bytes;
    // Real vs computed tokens (packing efficiency), and with packing / token budgets the
    // data-parallel balance of the delivered steps (Σ max / Σ mean over steps).
    d["real_tokens"] = s.real_tokens;
    d["computed_tokens"] = s.computed_tokens;
    d["sequences"] = s.sequences;
    d["efficiency"] = s.efficiency();
    d["padding_share"] = s.computed_tokens > 0 ? 1 - s.efficiency() : 0.0;
    d["steps"] = s.steps;
    d["repeats"] = s.repeats;
    d["patch_balance"] = s.patch_balance();
    d["token_balance"] = s.token_balance();
    d["worst_patch_ratio"] = s.worst_patch_ratio;
    py::dict stages;
    for (const pipeline::StageStats& st : s.stages) {
      py::dict sd;
      sd["busy_s"] = st.busy_s;
      sd["items"] = st.items;
      sd["threads"] = st.threads;
      sd["utilisation"] =
          s.elapsed_s > 0 && st.threads > 0 ? st.busy_s / st.threads / s.elapsed_s : 0.0;
      stages[py::str(st.name)] = sd;
    }
    d["stages"] = stages;
    // The failed samples by kind, most frequent first (what `stoker run` lists): stage, code,
    // reason pattern, count, and the first such sample's {sample, file, line, reason}.
    std::vector<pipeline::FailureKind> kinds;
    {
      py::gil_scoped_release nogil;
      kinds = live().failure_kinds(10);
    }
    py::list failures;
    for (const pipeline::FailureKind& k : kinds) {
      py::dict f, ex;
      f["stage"] = std::string(k.stage_name());
      f["code"] = std::string(k.code_name());
      f["reason"] = k.pattern;
      f["count"] = k.count;
      ex["sample"] = k.example.sample;
      ex["file"] = k.example.file;
      ex["line"] = k.example.line;
      ex["reason"] = k.example.reason;
      f["example"] = ex;
      failures.append(f);
    }
    d["failures"] = failures;
    // Samples over max_length (tokenize, ResourceExhausted): skipped, not an error — the Python
    // Loader warns with this count at the end of each epoch.
    const auto too_long = s.failed_by.find(
        {pipeline::FailureStage::kTokenize, ErrorCode::kResourceExhausted});
    d["dropped_too_long"] = too_long == s.failed_by.end() ? 0 : too_long->second;
    return d;
  }

  py::dict arena() {
    const batch::Arena& a = live().arena();
    py::dict d;
    d["base"] = reinterpret_cast<std::uintptr_t>(a.base());
    d["capacity"] = a.capacity();
    d["in_use"] = a.in_use();
    d["peak_in_use"] = a.peak_in_use();
    d["planned"] = a.planned_bytes();
    d["resident"] = a.resident_bytes();
    d["fd"] = a.fd();
    return d;
  }

  py::dict rank() {
    const dataset::RankInfo& r = live().rank();
    py::dict d;
    d["rank"] = r.rank;
    d["world_size"] = r.world_size;
    return d;
  }

  int batch_size() const { return batch_size_; }

 private:
  pipeline::Loader& live() {
    if (!loader_) raise(invalid_argument("Loader is closed"));
    return *loader_;
  }
  std::unique_ptr<pipeline::Loader> loader_;
  std::mutex next_mu_;
  pipeline::LoaderState before_last_;
  int batch_size_ = 0;
};

// A test hook for the exception table: raises the Error a code name stands for.
void raise_code(const std::string& code, const std::string& message) {
  static const ErrorCode kCodes[] = {
      ErrorCode::kInvalidArgument,  ErrorCode::kNotFound,      ErrorCode::kPermissionDenied,
      ErrorCode::kUnavailable,      ErrorCode::kDeadlineExceeded, ErrorCode::kDataLoss,
      ErrorCode::kResourceExhausted, ErrorCode::kUnimplemented, ErrorCode::kCancelled,
      ErrorCode::kInternal};
  for (ErrorCode c : kCodes) {
    if (error_code_name(c) == code) raise(Error(c, message));
  }
  raise(invalid_argument("unknown error code '" + code + "'"));
}

}  // namespace
}  // namespace stoker::python

PYBIND11_MODULE(_stoker, m) {
  using namespace stoker::python;
  m.doc() = "stoker engine bindings (use the `stoker` package, not this module)";
  // Messages from below the front ends name options as Python spells them (max_errors, not
  // --max-errors): base/option_name.h.
  stoker::set_option_style(stoker::OptionStyle::kPython);
  m.attr("__version__") = std::string(stoker::version());  // the package's __version__

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ErrorException& e) {
      std::string code(stoker::error_code_name(e.error.code()));
      py::object cls = error_classes().contains(code) ? error_classes()[py::str(code)]
                                                      : py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
      // Escaped: a message carries data (ids, paths, server text) that must not act on a
      // terminal, and py::str needs UTF-8.
      py::object exc = cls(stoker::printable(e.error.to_string()));
      try {
        exc.attr("code") = code;
      } catch (const py::error_already_set&) {
      }
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });

  m.def("install_error_classes",
        [](const py::dict& classes) {
          for (auto item : classes) error_classes()[item.first] = item.second;
        },
        "code name → exception class (the package's one table)");
  m.def("monotonic_ns", &monotonic_ns, "the steady clock next()'s ready_ns is taken from");
  m.def(
      "fnv1a64",
      [](py::buffer b, std::uint64_t seed) {
        py::buffer_info info = b.request();
        const std::size_t n = static_cast<std::size_t>(info.size * info.itemsize);
        py::gil_scoped_release release;
        return stoker::fnv1a64(info.ptr, n, seed);
      },
      py::arg("data"), py::arg("seed") = stoker::kFnv64Offset,
      "FNV-1a 64 of a contiguous buffer's bytes, chained by `seed` (what --batch-hashes hashes: "
      "every tensor's shape as int64, then its bytes, in layout order)");
  m.def("live_tensors", &live_tensors, "exported DLPack tensors not yet freed");
  m.def("_raise", &raise_code, "test hook: raise the error a code name stands for");
  m.def("option_schema", &option_schema, "the option schema's Python options (stoker/_options.py)");
  m.def("option_env", &option_env, "an option's environment fallback, checked (None: unset)");

  py::class_<RawLoader>(m, "RawLoader")
      .def(py::init<const py::dict&>())
      .def("next", &RawLoader::next)
      .def("state", &RawLoader::state)
      .def("state_before_last", &RawLoader::state_before_last)
      .def("resume", &RawLoader::resume)
      .def("stats", &RawLoader::stats)
      .def("arena", &RawLoader::arena)
      .def("rank", &RawLoader::rank)
      .def("close", &RawLoader::close)
      .def_property_readonly("batch_size", &RawLoader::batch_size);
  bind_served(m);
}
