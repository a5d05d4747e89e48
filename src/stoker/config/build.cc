#include "stoker/config/build.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "stoker/base/atomic_file.h"
#include "stoker/base/file.h"
#include "stoker/base/parse_number.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"

namespace stoker::config {
namespace {

constexpr std::int64_t kKiB = 1024;

std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  if (text.size() > 80) out += "...";
  return "'" + out + "'";
}

std::string choices_text(const OptionSpec& o) {
  std::string out;
  for (std::string_view c : o.choices) out += (out.empty() ? "" : ", ") + std::string(c);
  return out;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

std::string mib_text(std::int64_t bytes) {
  if (bytes % (std::int64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes % (std::int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::string range_text(const OptionSpec& o, const Machine& machine, std::int64_t unit) {
  if (o.kind == Kind::kNumber) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "[%g, %g]", o.dlo, o.dhi);
    return buf;
  }
  const Bound hi = o.upper(machine);
  std::string out = "[" + std::to_string(ceil_div(o.lo, unit)) + ", " +
                    std::to_string(hi.value / unit) + "]";
  if (!hi.why.empty()) out += " (" + hi.why + ")";
  return out;
}

Result<Value> parse_text(const OptionSpec& o, std::string_view text, std::string_view what,
                         const Machine& machine) {
  Value v;
  switch (o.kind) {
    case Kind::kBool: {
      std::string t(text);
      for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (t == "1" || t == "true") v.b = true;
      else if (t == "0" || t == "false") v.b = false;
      else return invalid_argument(std::string(what) + " must be 1 or 0 (true or false), got " +
                                   shown(text));
      return v;
    }
    case Kind::kInt: {
      const Bound hi = o.upper(machine);
      const std::string hint = hi.why.empty() ? std::string() : " (" + hi.why + ")";
      if (o.also != kNoAlso) {  // e.g. epochs: -1 (forever) or [1, ...]
        Result<long long> any = parse_int(what, text, std::numeric_limits<long long>::min(),
                                          std::numeric_limits<long long>::max());
        const bool in_range = any.ok() && (*any == o.also || (*any >= o.lo && *any <= hi.value));
        if (!in_range) {
          return invalid_argument(std::string(what) + " must be " + std::to_string(o.also) + " (" +
                                  std::string(o.also_means) + ") or an integer in [" +
                                  std::to_string(o.lo) + ", " + std::to_string(hi.value) + "]" +
                                  hint + ", got " + shown(text));
        }
        v.i = *any;
        return v;
      }
      STOKER_ASSIGN_OR_RETURN(long long x, parse_int(what, text, o.lo, hi.value, hint));
      v.i = x;
      return v;
    }
    case Kind::kUInt: {
      STOKER_ASSIGN_OR_RETURN(unsigned long long x,
                              parse_uint(what, text, 0, std::numeric_limits<std::uint64_t>::max()));
      v.u = x;
      return v;
    }
    case Kind::kBytes: {
      const Bound hi = o.upper(machine);
      const std::string hint = hi.why.empty() ? std::string() : " (" + hi.why + ")";
      STOKER_ASSIGN_OR_RETURN(v.i, parse_bytes(what, text, o.lo, hi.value, hint));
      return v;
    }
    case Kind::kNumber: {
      STOKER_ASSIGN_OR_RETURN(v.d, parse_double(what, text, o.dlo, o.dhi));
      return v;
    }
    case Kind::kText:
    case Kind::kPath:
      if (text.empty()) return invalid_argument(std::string(what) + " needs a value, got ''");
      v.s = std::string(text);
      return v;
    case Kind::kList:
      if (text.empty()) return invalid_argument(std::string(what) + " needs a value, got ''");
      v.list.emplace_back(text);
      return v;
    case Kind::kChoice:
      for (std::string_view c : o.choices) {
        if (c == text) {
          v.s = std::string(text);
          return v;
        }
      }
      return invalid_argument(std::string(what) + " must be one of " + choices_text(o) +
                              ", got " + shown(text));
    case Kind::kState:
      break;
  }
  return invalid_argument(std::string(what) + " cannot be given as text");
}

Result<std::optional<Value>> env_value(const OptionSpec& o, const Machine& machine,
                                       const EnvLookup& env) {
  if (o.env.empty()) return std::optional<Value>();
  const std::string var(o.env);
  const char* e = env ? env(var.c_str()) : std::getenv(var.c_str());
  if (e == nullptr || *e == '\0') return std::optional<Value>();
  STOKER_ASSIGN_OR_RETURN(Value v, parse_text(o, e, "$" + var, machine));
  return std::optional<Value>(std::move(v));
}

Builder::Builder(Command command, Frontend frontend, const Machine& machine, EnvLookup env)
    : command_(command), frontend_(frontend), machine_(machine), env_(std::move(env)) {
  if (!env_) env_ = [](const char* name) -> const char* { return std::getenv(name); };
  settings_.command = command;
}

std::string Builder::name(std::string_view option) const {
  const OptionSpec* o = find_option(option, command_);
  return o == nullptr ? std::string(option) : display_name(*o, frontend_);
}

Status Builder::set(const OptionSpec& o, const Value& value) {
  if (!o.takes(command_)) {
    return invalid_argument(display_name(o, frontend_) + " is not an option of " +
                            std::string(command_name(command_)));
  }
  assign(o, value);
  settings_.given.insert(&o);
  return ok_status();
}

void Builder::assign(const OptionSpec& o, const Value& value) {
  if (o.set != nullptr) o.set(settings_, value);
  values_[&o] = value;
}

Status Builder::set_text(const OptionSpec& o, std::string_view text) {
  const std::string what = display_name(o, frontend_);
  const std::int64_t unit = frontend_ == Frontend::kCli ? o.cli_unit : 1;
  if (unit != 1) {  // --arena-mb: whole units
    const Bound hi = o.upper(machine_);
    const std::string hint = hi.why.empty() ? std::string() : " (" + hi.why + ")";
    STOKER_ASSIGN_OR_RETURN(long long n, parse_int(what, text, ceil_div(o.lo, unit),
                                                   hi.value / unit, hint));
    Value v;
    v.i = n * unit;
    return set(o, v);
  }
  STOKER_ASSIGN_OR_RETURN(Value v, parse_text(o, text, what, machine_));
  return set(o, v);
}

// <model folder>/stoker.json: {"option": value, ...} for the options marked model_folder — the
// settings a checkpoint was trained with travel with it. Flags and keywords win over it.
Status Builder::apply_model_folder(const std::string& folder) {
  const std::string path = folder + "/stoker.json";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ok_status();  // none: nothing to apply
  if (!S_ISREG(st.st_mode)) return invalid_argument(path + " is not a regular file");
  if (st.st_size > 64 * kKiB) return invalid_argument(path + " is over 64 KiB");
  STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument(path + ": expected one JSON object of options");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const OptionSpec* o = nullptr;
    std::string allowed;
    for (const OptionSpec& c : options()) {
      if (!c.model_folder) continue;
      allowed += (allowed.empty() ? "" : ", ") + std::string(c.name);
      if (c.name == it.key()) o = &c;
    }
    if (o == nullptr) {
      return invalid_argument(path + ": '" + it.key() + "' is not an option a model folder may "
                              "set (it may set: " + allowed + ")");
    }
    if (!o->takes(command_) || settings_.given.count(o) > 0) continue;  // flags win
    std::string value;
    if (it->is_string()) value = it->get<std::string>();
    else if (it->is_boolean()) value = it->get<bool>() ? "true" : "false";
    else if (it->is_number_integer()) value = it->dump();
    else if (it->is_number()) value = it->dump();
    else return invalid_argument(path + ": " + it.key() + " must be a string, number or bool");
    STOKER_ASSIGN_OR_RETURN(Value v, parse_text(*o, value, path + ": " + it.key(), machine_));
    assign(*o, v);
    from_folder_.insert(o);
  }
  return ok_status();
}

Result<Settings> Builder::finish() {
  Settings& s = settings_;
  const bool serving =
      command_ == kServe || command_ == kPyServe || (command_ == kCluster && s.cluster.serve);
  auto apply_default = [&](const OptionSpec& o) -> Status {
    const std::string def = o.default_for(command_, serving);
    if (def.empty() || o.set == nullptr) return ok_status();
    Result<Value> v = parse_text(o, def, o.name, machine_);
    if (!v.ok()) return internal_error("option schema: the default of " + std::string(o.name) +
                                       " does not parse: " + v.error().to_string());
    assign(o, *v);
    return ok_status();
  };
  // The model, parsed once for the whole run (every Loader and the receivers share it).
  const OptionSpec* model = find_option("model", command_);
  if (model != nullptr) {
    if (s.given.count(model) == 0) STOKER_RETURN_IF_ERROR(apply_default(*model));
    // Through its family (model/family.h): a Qwen-VL spec is parsed into its ModelConfig; a
    // family without one (null) reads its spec when the Loader opens it.
    Result<std::shared_ptr<const model::ModelConfig>> m = model::load_config(s.loader.model);
    if (!m.ok()) return std::move(m).error().with_context(display_name(*model, frontend_));
    s.loader.model_config = *m;
    if (*m != nullptr && !(*m)->folder.empty()) {
      STOKER_RETURN_IF_ERROR(apply_model_folder((*m)->folder));
    }
  }
  // The environment's fallbacks, read here once, then the defaults.
  for (const OptionSpec& o : options()) {
    if (!o.takes(command_) || s.given.count(&o) > 0 || from_folder_.count(&o) > 0 ||
        &o == model) {
      continue;
    }
    STOKER_ASSIGN_OR_RETURN(std::optional<Value> from_env, env_value(o, machine_, env_));
    if (from_env) {
      assign(o, *from_env);
      continue;
    }
    STOKER_RETURN_IF_ERROR(apply_default(o));
  }
  STOKER_RETURN_IF_ERROR(cross_check());
  STOKER_RETURN_IF_ERROR(check_outputs());
  if (command_ == kPyLoader) {  // a Python Loader writes its own trace (no observer)
    s.loader.trace_path = s.observe.trace_path;
    s.loader.trace = s.observe.trace;
  }
  if ((command_ & kLoaderCommands) != 0) {
    // What the options above did not already check (the engine's own rules).
    STOKER_RETURN_IF_ERROR(s.loader.validate());
  }
  return std::move(settings_);
}

const Value* Builder::value(std::string_view option) const {
  const OptionSpec* o = find_option(option, command_);
  if (o == nullptr) return nullptr;
  auto it = values_.find(o);
  return it == values_.end() ? nullptr : &it->second;
}

bool Builder::given(std::string_view option) const {
  const OptionSpec* o = find_option(option, command_);
  return o != nullptr && settings_.given.count(o) > 0;
}

// A switch as the front end writes it on: "--packing" / "packing=True".
std::string Builder::on(std::string_view option) const {
  return frontend_ == Frontend::kPython ? std::string(option) + "=True" : name(option);
}

// Output paths (issue #28), before any work: a folder that does not exist, a path that is a
// folder, a FIFO or a socket, a file this user cannot write — refused now, naming the option,
// instead of after the whole run. Existing files are opened for appending (never truncated: the
// delivered log of a resumed run, an error report cut back on resume); for a missing file, a
// probe file beside it is created and removed (base/atomic_file.h probe_writable). The disk filling up later is
// not something a probe can see: kDiagnostic writes then warn (Output, schema.h).
Status Builder::check_outputs() const {
  for (const OptionSpec& o : options()) {
    if (o.output == Output::kNone || !o.takes(command_)) continue;
    const Value* v = value(o.name);
    if (v == nullptr || v->s.empty()) continue;
    Status st = probe_writable(v->s, o.output == Output::kDiagnosticFolder);
    if (!st.ok()) {
      return invalid_argument(display_name(o, frontend_) + " " + v->s + ": cannot be written (" +
                              st.error().message() + "); checked before the run, so that it "
                              "does not fail at the end");
    }
  }
  return ok_status();
}

Status Builder::cross_check() const {
  const Settings& s = settings_;
  const bool python = frontend_ == Frontend::kPython;
  const std::string integer = python ? "an int" : "an integer";
  auto got = [&](std::int64_t v) { return python ? std::to_string(v) : shown(std::to_string(v)); };
  auto flag_on = [&](std::string_view n) {
    const Value* v = value(n);
    return v != nullptr && v->b;
  };
  // Data: at least one manifest (Python's Loader checks its own: data or connect).
  if ((command_ & (kRun | kServe | kCluster | kPyServe | kInspect)) != 0 && s.loader.data.empty()) {
    return invalid_argument(python ? "data: at least one manifest"
                                   : "expected DATA.jsonl [MORE.jsonl ...] (see --help)");
  }
  if ((command_ & kLoaderCommands) != 0) {
    const bool pack = flag_on("packing"), budget = flag_on("token_budget");
    if (pack && budget) {
      return invalid_argument(name("packing") + " and " + name("token_budget") +
                              " exclude each other");
    }
    for (std::string_view n : {"max_tokens", "pack_format", "pack_window", "pack_align",
                               "position_rows"}) {
      if (given(n) && !pack && !budget) {
        return invalid_argument(name(n) + " needs " + on("packing") + " or " + on("token_budget"));
      }
    }
    if (budget && given("pack_format")) {
      return invalid_argument(name("pack_format") + " is for " + on("packing") +
                              " (token budgets give padded batches)");
    }
    if (given("pack_align") && s.loader.packing.format != batch::PackFormat::kMegatron) {
      return invalid_argument(name("pack_align") + " is for " + name("pack_format") +
                              (python ? "='megatron'" : " megatron"));
    }
    // One ready batch needs at least one arena block; 64 KiB each bounds the ring by the arena.
    const std::int64_t arena = static_cast<std::int64_t>(s.loader.arena.bytes);
    const std::int64_t prefetch_cap = std::clamp<std::int64_t>(arena / (64 * kKiB), 1, 1024);
    if (s.loader.prefetch > prefetch_cap) {
      return invalid_argument(name("prefetch") + " must be " + integer + " in [1, " +
                              std::to_string(prefetch_cap) + "] (one ready batch per 64 KiB of " +
                              "the " + mib_text(arena) + " arena, " + name("arena_bytes") +
                              "), got " + got(s.loader.prefetch));
    }
    const std::int64_t window_cap = std::clamp<std::int64_t>(arena / (16 * kKiB), 1, 65536);
    if (s.loader.window > window_cap) {
      return invalid_argument(name("sample_window") + " must be " + integer + " in [0, " +
                              std::to_string(window_cap) + "] (one sample in flight per 16 KiB " +
                              "of the " + mib_text(arena) + " arena, " + name("arena_bytes") +
                              "), got " + got(s.loader.window));
    }
  }
  if (find_option("rank", command_) != nullptr) {
    if (given("rank") != given("world_size")) {
      return invalid_argument(name("rank") + " and " + name("world_size") + " go together");
    }
    if (given("rank") && *s.loader.rank.rank >= *s.loader.rank.world_size) {
      const std::string hi = std::to_string(*s.loader.rank.world_size - 1);
      return invalid_argument(name("rank") + " must be " + integer + " in [0, " +
                              (python ? "world_size - 1] = [0, " + hi : hi) + "], got " +
                              got(*s.loader.rank.rank));
    }
  }
  if (given("local_rank") != given("local_world_size")) {
    return invalid_argument(name("local_rank") + " and " + name("local_world_size") +
                            " go together");
  }
  for (std::string_view n : {"trace_sample", "trace_max_events"}) {
    if (given(n) && !given("trace") && !given("report")) {
      return invalid_argument(name(n) + " needs " +
                              (python ? std::string("trace=FILE")
                                      : name("trace") + " FILE" +
                                            (find_option("report", command_) != nullptr
                                                 ? " (or --report DIR)" : "")));
    }
  }
  if (given("metrics_addr") && !given("metrics_port")) {
    return invalid_argument(name("metrics_addr") + " needs " + name("metrics_port"));
  }
  const bool serving =
      command_ == kServe || command_ == kPyServe || (command_ == kCluster && s.cluster.serve);
  if (command_ == kCluster) {
    if (given("role") && given("receivers")) {
      return invalid_argument("--role and --receivers exclude each other");
    }
    if (!serving) {
      for (std::string_view n : {"socket", "world_size", "window", "idle_timeout_s"}) {
        if (given(n)) {
          return invalid_argument(name(n) + " goes with --serve (the node server); without it "
                                  "the world is the R receivers and --sample-window the "
                                  "samples requested ahead");
        }
      }
    }
  }
  if (serving) {
    // Every rank has its own arena: all of them within 3/4 of the memory (arena_bytes' own
    // bound, options.cc).
    const std::int64_t arena = static_cast<std::int64_t>(s.loader.arena.bytes);
    const std::int64_t world = s.serve.world_size;
    const std::int64_t budget = machine_.memory_bytes / 4 * 3;
    if (arena > budget / world) {
      return invalid_argument(name("arena_bytes") + " x " + name("world_size") + " = " +
                              mib_text(arena) + " x " + std::to_string(world) +
                              " is more than 3/4 of this machine's memory (" +
                              mib_text(machine_.memory_bytes) + "): every rank has its own arena");
    }
  }
  return ok_status();
}

}  // namespace stoker::config
