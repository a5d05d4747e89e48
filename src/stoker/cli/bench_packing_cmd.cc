// `stoker bench packing [--quick]`: flags → bench::run_packing_bench (bench/packing_bench.h).
#include <cstdio>
#include <limits>

#include "stoker/bench/packing_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench packing [--quick] [--data FILE.jsonl | --records N (1000 quick, 4000)]\n"
    "         [--samples M (draw M with replacement)] [--world 8] [--window 1000] [--batch-size 8]\n"
    "         [--model M] [--tokenizer DIR] [--seed S] [--threads T] [--dir DIR]\n"
    "Padded batches vs token-budget batches vs packing at L = 4096, 8192, 16384 on the synth mix:\n"
    "real tokens / computed tokens, rows per epoch, data-parallel balance of vision patches and\n"
    "tokens. Last line: `efficiency: N%` (packing at 8192). See bench/README.md.";

Result<bench::PackingBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"data", "records", "samples", "world", "window", "batch-size",
                              "model", "tokenizer", "seed", "threads", "dir"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  if (args.has("data") && (args.has("records") || args.has("dir"))) {
    return invalid_argument("--data measures that manifest: --records / --dir are for synth");
  }
  bench::PackingBenchOptions o;
  o.quick = args.has("quick");
  o.data = args.get("data");
  o.model = args.get("model", o.model);
  o.tokenizer = args.get("tokenizer");
  o.dir = args.get("dir");
  STOKER_ASSIGN_OR_RETURN(o.records, args.get_int<int>("records", 0, 1, 1'000'000));
  STOKER_ASSIGN_OR_RETURN(o.samples, args.get_int<int>("samples", 0, 1, 100'000'000));
  STOKER_ASSIGN_OR_RETURN(o.world, args.get_int<int>("world", 8, 1, 65536));
  STOKER_ASSIGN_OR_RETURN(o.window, args.get_int<int>("window", 1000, 1, 1 << 24));
  STOKER_ASSIGN_OR_RETURN(o.batch_size, args.get_int<int>("batch-size", 8, 1, 1 << 20));
  STOKER_ASSIGN_OR_RETURN(o.seed, args.get_int<std::uint64_t>("seed", 0));
  STOKER_ASSIGN_OR_RETURN(o.threads, args.get_int<int>("threads", 0, 1, 4096));
  return o;
}

}  // namespace

int run_bench_packing(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench packing", o.error());
  auto r = bench::run_packing_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench packing", r.error());
}

}  // namespace stoker::cli
