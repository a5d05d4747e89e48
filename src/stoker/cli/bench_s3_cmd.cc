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
    "usage: stoker bench s3 [--quick] [--size-kb 100] [--concurrency N (stoker; default the io\n"
    "         module's 256)] [--peer-workers 16,64 (boto3 thread counts; the fastest is the peer)]\n"
    "         [--warmup 1] [--passes N (2 quick, 3)] [--python PY]\n"
    "Exit 77 (skipped) without node, the npm s3rver, nginx + lua or python3-boto3.";

Result<bench::S3BenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"size-kb", "concurrency", "peer-workers", "warmup", "passes", "python"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::S3BenchOptions o;
  o.quick = args.has("quick");
  o.python = args.get("python", o.python);
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.size_kb, args.get_int<int>("size-kb", 100, 1, 1'000'000));  // ≤ 1 GB
  STOKER_ASSIGN_OR_RETURN(o.concurrency, args.get_int<int>("concurrency", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 100));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", 0, 1, 100));
  std::stringstream list(args.get("peer-workers"));
  for (std::string item; std::getline(list, item, ',');) {
    STOKER_ASSIGN_OR_RETURN(long long w, parse_int("--peer-workers", item, 1, 4096));
    o.peer_workers.push_back(static_cast<int>(w));
  }
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
