// `stoker bench sources [--quick]`: flags → bench::run_sources_bench (bench/sources_bench.h).
#include <cstdio>

#include "stoker/bench/sources_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench sources [--quick] [--records N (64 quick, 256)] [--shards 4]\n"
    "         [--max-side PX (384 quick, 768)] [--delay-ms 50 (-1: no remote rows)]\n"
    "         [--threads 2 (stoker's CPU threads = the peer's workers)] [--warmup 1]\n"
    "         [--passes N (2 quick, 3)] [--python PY]";

Result<bench::SourcesBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(Args args, Args::parse(argc, argv,
                                                 {"records", "shards", "max-side", "delay-ms", "threads",
                                                  "warmup", "passes", "python"},
                                                 {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::SourcesBenchOptions o;
  o.quick = args.has("quick");
  o.python = args.get("python", o.python);
  STOKER_ASSIGN_OR_RETURN(o.records, args.get_int<int>("records", 0, 8, 1'000'000));
  STOKER_ASSIGN_OR_RETURN(o.shards, args.get_int<int>("shards", 4, 1, 1000));
  STOKER_ASSIGN_OR_RETURN(o.max_side, args.get_int<int>("max-side", 0, 32, 8192));
  STOKER_ASSIGN_OR_RETURN(o.delay_ms, args.get_int<int>("delay-ms", 50, -1, 60'000));
  STOKER_ASSIGN_OR_RETURN(o.threads, args.get_int<int>("threads", 2, 1, 256));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 100));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", 0, 1, 100));
  return o;
}

}  // namespace

int run_bench_sources(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench sources", o.error());
  auto r = bench::run_sources_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench sources", r.error());
}

}  // namespace stoker::cli
