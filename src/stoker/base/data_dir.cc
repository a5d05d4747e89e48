#include "stoker/base/data_dir.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>
#include <system_error>

namespace stoker {
namespace fs = std::filesystem;

namespace {
// Any address inside this object file: dladdr maps it to the loaded file that holds it.
void anchor() {}
}  // namespace

fs::path running_binary() {
  Dl_info info{};
  link_map* map = nullptr;
  std::error_code ec;
  // A shared object's link_map names the path it was loaded from. The main program's name is
  // empty (dladdr would substitute argv[0], which need not be a path), so it comes from
  // /proc/self/exe instead.
  if (dladdr1(reinterpret_cast<void*>(&anchor), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    fs::path p = fs::weakly_canonical(fs::absolute(map->l_name, ec), ec);
    if (!ec) return p;
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

std::optional<fs::path> find_data_dir_above(const fs::path& dir, int max_up) {
  std::error_code ec;
  fs::path d = dir;
  for (int up = 0; up <= max_up && !d.empty(); ++up) {
    fs::path candidate = d / "share" / "stoker";
    if (fs::is_directory(candidate, ec)) return candidate;
    if (d == d.parent_path()) break;  // reached "/"
    d = d.parent_path();
  }
  return std::nullopt;
}

Result<fs::path> data_dir() {
  std::error_code ec;
  if (const char* env = std::getenv(kDataDirEnv); env != nullptr && env[0] != '\0') {
    if (!fs::is_directory(env, ec)) {
      return not_found(std::string("$") + kDataDirEnv + "=" + env + " is not a directory");
    }
    return fs::path(env);
  }
  const fs::path binary = running_binary();
  if (binary.empty()) {
    return not_found(std::string("cannot tell where this program is installed (no "
                                 "/proc/self/exe); set $") +
                     kDataDirEnv + " to its share/stoker folder");
  }
  if (auto found = find_data_dir_above(binary.parent_path())) return *found;
  return not_found("no share/stoker data folder next to " + binary.string() +
                   " (nor in its parent folders): install with `cmake --install`, or set $" +
                   kDataDirEnv);
}

}  // namespace stoker
