// `stoker bench loader [--quick]`: flags → bench::run_loader_bench (bench/loader_bench.h).
#include <sched.h>

#include <cstdio>
#include <limits>

#include "stoker/bench/loader_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench loader [--quick] [--images N (400 quick, 800)] [--size 1920x1080]\n"
    "         [--model M] [--tokenizer DIR] [--threads T] [--batch-size 8] [--prefetch 4]\n"
    "         [--core N] [--rounds R (3 quick, 5)] [--dir DIR]\n"
    "CPU per image of the pipeline::Loader (no trainer) vs ImageProcessor::process() alone (on one\n"
    "core, and on the Loader's thread count with the same consumer), in R rounds (medians); first\n"
    "100 samples vs steady state, peak RSS per sample in flight, the limiter. Last line:\n"
    "`loader/process: N` (steady-state CPU per image, vs process() on the Loader's thread count).\n"
    "See bench/README.md.";

Result<bench::LoaderBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"images", "size", "model", "tokenizer", "threads", "batch-size",
                              "prefetch", "core", "rounds", "dir"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::LoaderBenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  o.tokenizer = args.get("tokenizer");
  o.size = args.get("size", o.size);
  o.dir = args.get("dir");
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.images, args.get_int<int>("images", 0, 101, 1'000'000));
  STOKER_ASSIGN_OR_RETURN(o.threads, args.get_int<int>("threads", 0, 1, 4096));
  STOKER_ASSIGN_OR_RETURN(o.batch_size, args.get_int<int>("batch-size", 8, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.prefetch, args.get_int<int>("prefetch", 4, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.rounds, args.get_int<int>("rounds", 0, 1, 100));
  return o;
}

}  // namespace

int run_bench_loader(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench loader", o.error());
  auto r = bench::run_loader_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench loader", r.error());
}

}  // namespace stoker::cli
