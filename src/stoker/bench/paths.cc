#include "stoker/bench/paths.h"

#include <cstdlib>

namespace stoker::bench {

namespace fs = std::filesystem;

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

std::vector<fs::path> bench_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("STOKER_BENCH_DIR"); env != nullptr && *env != '\0')
    dirs.emplace_back(env);
  if (fs::path exe = executable_dir(); !exe.empty()) {
    dirs.push_back(exe.parent_path() / "share" / "stoker" / "bench");  // installed: bin/../share
    dirs.push_back(exe / "share" / "stoker" / "bench");                // the build tree
  }
  return dirs;
}

Result<fs::path> find_bench_file(std::string_view name) {
  std::string tried;
  for (const fs::path& d : bench_dirs()) {
    std::error_code ec;
    fs::path p = d / name;
    if (fs::exists(p, ec)) return p;
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  return not_found("benchmark helper '" + std::string(name) + "' not found (tried " +
                   (tried.empty() ? std::string("nothing: no $STOKER_BENCH_DIR, no /proc/self/exe")
                                  : tried) +
                   "); set $STOKER_BENCH_DIR to a folder holding it (a checkout's bench/, with "
                   "tools/oracles/node_modules linked as node_modules for the node peers)");
}

}  // namespace stoker::bench
