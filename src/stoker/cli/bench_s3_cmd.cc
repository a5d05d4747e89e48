// `stoker bench s3 [--quick]`: flags → bench::run_s3_bench (bench/s3_bench.h).
#include <cstdio>
#include <limits>
#include <sstream>

#include "stoker/bench/s3_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench s3 [--quick] [--size-kb 16] [--small N (2000 quick, 10000)]\n"
    "         [--per-run N (small objects per run: 1000 quick, 2000)] [--large-mb 8]\n"
    "         [--large N (24 quick, 100; 0: no large set)] [--delays 50,200 (ms)]\n"
    "         [--s3rvers 4] [--concurrency N (stoker; default the io module's 256)]\n"
    "         [--peer-workers 16,64 (boto3 thread counts; the fastest is the peer)]\n"
    "         [--warmup 1] [--passes N (2 quick, 3)] [--python PY]\n"
    "Exit 77 (skipped) without node, the npm s3rver, nginx + lua or python3-boto3.";

Result<std::vector<int>> int_list(const Args& args, const std::string& flag, long long lo,
                                  long long hi) {
  std::vector<int> out;
  std::stringstream list(args.get(flag));
  for (std::string item; std::getline(list, item, ',');) {
    STOKER_ASSIGN_OR_RETURN(long long v, parse_int("--" + flag, item, lo, hi));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

Result<bench::S3BenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"size-kb", "small", "per-run", "large-mb", "large", "delays",
                              "s3rvers", "concurrency", "peer-workers", "warmup", "passes",
                              "python"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::S3BenchOptions o;
  o.quick = args.has("quick");
  o.python = args.get("python", o.python);
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.size_kb, args.get_int<int>("size-kb", 16, 1, 1'000'000));  // ≤ 1 GB
  STOKER_ASSIGN_OR_RETURN(o.small_objects, args.get_int<int>("small", 0, 1, 1'000'000));
  STOKER_ASSIGN_OR_RETURN(o.per_run, args.get_int<int>("per-run", 0, 1, 1'000'000));
  STOKER_ASSIGN_OR_RETURN(o.large_mb, args.get_int<int>("large-mb", 8, 1, 1024));
  STOKER_ASSIGN_OR_RETURN(o.large_objects, args.get_int<int>("large", o.quick ? 24 : 100, 0, 10'000));
  if (o.large_objects == 0) o.large_objects = -1;  // none (0 is the default's marker)
  STOKER_ASSIGN_OR_RETURN(o.s3rvers, args.get_int<int>("s3rvers", 4, 1, 64));
  STOKER_ASSIGN_OR_RETURN(o.concurrency, args.get_int<int>("concurrency", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 100));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", 0, 1, 100));
  STOKER_ASSIGN_OR_RETURN(o.peer_workers, int_list(args, "peer-workers", 1, 4096));
  STOKER_ASSIGN_OR_RETURN(o.delays_ms, int_list(args, "delays", 0, 60'000));
  return o;
}

}  // namespace

int run_bench_s3(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench s3", o.error());
  auto r = bench::run_s3_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench s3", r.error());
}

}  // namespace stoker::cli
