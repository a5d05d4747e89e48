#include "stoker/config/schema.h"

#include <sched.h>
#include <unistd.h>

#include <thread>

#include "stoker/config/settings.h"

namespace stoker::config {

const Machine& Machine::current() {
  static const Machine m = [] {
    Machine out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) out.cores = CPU_COUNT(&set);
    if (out.cores < 1) out.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    out.memory_bytes = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page
                                             : std::int64_t{1} << 30;
    return out;
  }();
  return m;
}

std::string_view command_name(Command c) {
  switch (c) {
    case kRun: return "run";
    case kServe: return "serve";
    case kCluster: return "cluster";
    case kInspect: return "inspect";
    case kPyLoader: return "Loader";
    case kPyServe: return "serve()";
    case kRender: return "render";
  }
  return "?";
}

Bound OptionSpec::upper(const Machine& m) const {
  if (hi_for != nullptr) {
    Bound b = hi_for(m);
    if (b.value < hi) return b;
  }
  return {hi, ""};
}

std::string OptionSpec::default_for(Command c, bool serving) const {
  (void)c;
  if (serving && !def_serve.empty()) return std::string(def_serve);
  return std::string(def);
}

const OptionSpec* find_option(std::string_view name, Command command) {
  for (const OptionSpec& o : options()) {
    if (o.name == name && o.takes(command)) return &o;
  }
  return nullptr;
}

const OptionSpec* find_unit_option(std::string_view name, Command command) {
  for (const OptionSpec& o : options()) {
    if (!o.unit_name.empty() && o.unit_name == name && o.takes(command)) return &o;
  }
  return nullptr;
}

const OptionSpec* find_flag(std::string_view flag, Command command) {
  for (const OptionSpec& o : options()) {
    if (!o.positional && !o.flag.empty() && o.flag == flag && o.takes(command)) return &o;
  }
  return nullptr;
}

std::string display_name(const OptionSpec& o, Frontend fe) {
  if (fe == Frontend::kPython || o.flag.empty()) return std::string(o.name);
  if (o.positional) return std::string(o.flag);  // DATA
  return "--" + std::string(o.flag);
}

bool Settings::has(std::string_view name) const {
  for (const OptionSpec* o : given) {
    if (o->name == name) return true;
  }
  return false;
}

}  // namespace stoker::config
