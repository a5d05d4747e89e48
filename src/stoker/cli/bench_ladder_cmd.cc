// `stoker bench ladder [--quick]`: flags → bench::run_ladder_bench (bench/ladder_bench.h).
#include <cstdio>
#include <limits>

#include "stoker/bench/ladder_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

Result<bench::LadderOptions> parse(const Args& args) {
  bench::LadderOptions o;
  o.quick = args.has("quick");
  o.data = args.get("data");
  o.model = args.get("model", o.model);
  o.tokenizer = args.get("tokenizer");
  o.out = args.get("out", o.out);
  o.modes = args.get("modes", o.modes);
  // 0 / -1: sized by the benchmark; a value given must be usable as is.
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.batch_size, args.get_int<int>("batch-size", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.steps, args.get_int<int>("steps", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.threads, args.get_int<int>("threads", 0, 0, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.prefetch, args.get_int<int>("prefetch", 4, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.step_ms, args.get_double("step-ms", -1, 0, 86'400'000));  // ≤ a day
  STOKER_ASSIGN_OR_RETURN(o.worker_sched, exec::parse_sched_class(args.get("worker-sched", "batch")));
  return o;
}

}  // namespace

int run_bench_ladder(int argc, char** argv) {
  auto args = Args::parse(argc, argv,
                          {"data", "model", "tokenizer", "batch-size", "step-ms", "steps", "out",
                           "threads", "prefetch", "modes", "worker-sched"},
                          {"quick", "help"});
  if (!args.ok()) return report("bench ladder", args.error());
  if (args->has("help")) {
    std::printf("%s", bench::kLadderHelp);
    return 0;
  }
  auto o = parse(*args);
  if (!o.ok()) return report("bench ladder", o.error());
  Status s = bench::run_ladder_bench(*o);
  return s.ok() ? 0 : report("bench ladder", s.error());
}

}  // namespace stoker::cli
