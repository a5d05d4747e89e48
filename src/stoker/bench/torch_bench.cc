#include "stoker/bench/torch_bench.h"

#include <filesystem>

#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"

namespace stoker::bench {

namespace fs = std::filesystem;

namespace {
// <exe dir>/python/stoker/_stoker*.so: the build tree's Python package.
fs::path build_tree_package() {
  const fs::path dir = executable_dir() / "python";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "stoker", ec))
    if (e.path().filename().string().rfind("_stoker", 0) == 0 && e.path().extension() == ".so")
      return dir;
  return {};
}

Result<std::vector<std::string>> python_bench_argv(const std::string& script_name,
                                                   const std::vector<std::string>& args,
                                                   const std::string& python) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file(script_name));
  std::vector<std::string> argv = {python, script.string(), "--stoker-bin",
                                   (executable_dir() / "stoker").string()};
  if (fs::path pkg = build_tree_package(); !pkg.empty()) {
    argv.push_back("--python-dir");
    argv.push_back(pkg.string());
  } else if (!run_capture({python, "-c", "import stoker._stoker"}).ok()) {
    return not_found("the stoker Python package is neither next to this executable (" +
                     (executable_dir() / "python").string() +
                     ": build the stoker_python target) nor importable by " + python);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}
}  // namespace

Result<int> run_python_bench(const std::string& script_name, const std::vector<std::string>& args,
                             const std::string& python) {
  STOKER_ASSIGN_OR_RETURN(auto argv, python_bench_argv(script_name, args, python));
  return run_passthrough(argv, single_thread_env());
}

Result<std::string> capture_python_bench(const std::string& script_name,
                                         const std::vector<std::string>& args,
                                         const std::string& python) {
  STOKER_ASSIGN_OR_RETURN(auto argv, python_bench_argv(script_name, args, python));
  return run_capture(argv, single_thread_env());
}

Result<int> run_torch_bench(const std::vector<std::string>& args, const std::string& python) {
  return run_python_bench("torch_bench.py", args, python);
}

Result<int> run_finish_bench(const std::vector<std::string>& args, const std::string& python) {
  return run_python_bench("finish_bench.py", args, python);
}

}  // namespace stoker::bench
