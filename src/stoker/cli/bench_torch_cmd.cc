// `stoker bench torch [--quick] [...]` and `stoker bench finish [--quick] [...]`:
// bench::run_torch_bench / run_finish_bench (bench/torch_bench.h) with the arguments as given;
// bench/torch_bench.py and bench/finish_bench.py parse them (`--help` lists them).
#include <string>
#include <vector>

#include "stoker/bench/torch_bench.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_bench_torch(int argc, char** argv) {
  auto r = bench::run_torch_bench(std::vector<std::string>(argv, argv + argc));
  return r.ok() ? *r : report("bench torch", r.error());
}

int run_bench_finish(int argc, char** argv) {
  auto r = bench::run_finish_bench(std::vector<std::string>(argv, argv + argc));
  return r.ok() ? *r : report("bench finish", r.error());
}

}  // namespace stoker::cli
