// `stoker bench torch [--quick] [...]`: stoker's Python Loader vs torch's DataLoader(num_workers=2)
// running the equivalent pure-Python pipeline, same run, same synthetic data, same outputs. The
// benchmark itself is bench/torch_bench.py (it needs torch, Pillow, numpy, jinja2, regex: Debian's
// /usr/bin/python3); this command finds it, the build's python/ dir (the `_stoker` extension,
// built by the stoker_python target beside this binary) and this binary (for `stoker synth`), and
// execs it with the remaining arguments. Last line: `ratio: N`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace stoker::cli {
namespace fs = std::filesystem;

namespace {

fs::path find_script() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("STOKER_SOURCE_DIR")) roots.emplace_back(env);
#ifdef STOKER_SOURCE_DIR
  roots.emplace_back(STOKER_SOURCE_DIR);
#endif
  for (const fs::path& r : roots) {
    fs::path p = r / "bench" / "torch_bench.py";
    if (fs::exists(p)) return p;
  }
  return {};
}

bool has_extension(const fs::path& python_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(python_dir / "stoker", ec)) {
    if (e.path().filename().string().rfind("_stoker", 0) == 0 && e.path().extension() == ".so") {
      return true;
    }
  }
  return false;
}

}  // namespace

int run_bench_torch(int argc, char** argv) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::fprintf(stderr, "stoker bench torch: cannot resolve /proc/self/exe\n");
    return 1;
  }
  fs::path script = find_script();
  if (script.empty()) {
    std::fprintf(stderr, "stoker bench torch: bench/torch_bench.py not found (set STOKER_SOURCE_DIR)\n");
    return 1;
  }
  fs::path python_dir = exe.parent_path() / "python";
  if (!has_extension(python_dir)) {
    std::fprintf(stderr,
                 "stoker bench torch: no _stoker extension in %s (build it: ninja -C %s "
                 "stoker_python)\n",
                 python_dir.c_str(), exe.parent_path().c_str());
    return 1;
  }
  const char* python = "/usr/bin/python3";  // Debian's: torch, Pillow, numpy (see ORACLES.md)
  std::vector<std::string> args = {python,         script.string(),     "--stoker-bin",
                                   exe.string(),   "--python-dir",      python_dir.string()};
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  execv(python, cargs.data());
  std::perror("stoker bench torch: exec /usr/bin/python3");
  return 1;
}

}  // namespace stoker::cli
