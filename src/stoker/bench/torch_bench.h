// `stoker bench torch` (and `bench finish`, below): stoker's Python Loader against torch.utils.data.DataLoader(num_workers=2)
// running the HF slow image processor path, on an image-only dataset. The benchmark itself is
// bench/torch_bench.py (torch, Pillow, numpy: Debian's /usr/bin/python3); this finds it (paths.h),
// the `stoker` Python package (<build>/python next to the executable, else the interpreter's
// own path: an installed package or stoker.pth) and this executable (for `stoker synth`), and
// runs it with the remaining arguments. Errors: NotFound (script); the script's exit status
// otherwise (1 = outputs differ).
#pragma once

#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::bench {

Result<int> run_torch_bench(const std::vector<std::string>& args,
                            const std::string& python = "/usr/bin/python3");

// `stoker bench finish` (issue 26): the production Loader with finish="cpu" vs finish="device"
// (+ stoker.finish on cpu torch, timed apart) — bench/finish_bench.py, found and run the same way.
Result<int> run_finish_bench(const std::vector<std::string>& args,
                             const std::string& python = "/usr/bin/python3");

// Runs bench/<script_name> with --stoker-bin (this executable) and --python-dir (the build
// tree's package, when it is next to the executable) before `args`.
Result<int> run_python_bench(const std::string& script_name, const std::vector<std::string>& args,
                             const std::string& python = "/usr/bin/python3");
// The same with stdout captured (its exit status non-zero: an error naming the command).
Result<std::string> capture_python_bench(const std::string& script_name,
                                         const std::vector<std::string>& args,
                                         const std::string& python = "/usr/bin/python3");

}  // namespace stoker::bench
