// `stoker bench scale [--quick]`: flags → bench::run_scale_bench (bench/scale_bench.h).
#include <cstdio>
#include <limits>

#include "stoker/bench/scale_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

Result<bench::ScaleOptions> parse(const Args& args) {
  bench::ScaleOptions o;
  o.quick = args.has("quick");
  o.workers = args.get("workers");
  o.rate = args.get("rate");
  o.data = args.get("data");
  o.model = args.get("model");
  o.tokenizer = args.get("tokenizer");
  o.prefix = args.get("prefix", o.prefix);
  o.subnet = args.get("subnet", o.subnet);
  o.out = args.get("out", o.out);
  o.stoker = args.get("stoker");
  const std::string size = args.get("size");
  if (!size.empty() && (std::sscanf(size.c_str(), "%dx%d", &o.width, &o.height) != 2 || o.width < 32 ||
      o.height < 32 || o.width > 16384 || o.height > 16384))
    return invalid_argument("--size WxH (32..16384 each), not '" + size + "'");
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.cpu, args.get_double("cpu", -1, 0.01, 64));
  STOKER_ASSIGN_OR_RETURN(o.gpu_cpu, args.get_double("gpu-cpu", -1, 0.01, 64));
  STOKER_ASSIGN_OR_RETURN(o.step_ms, args.get_double("step-ms", -1, 1, 86'400'000));
  STOKER_ASSIGN_OR_RETURN(o.batch_size, args.get_int<int>("batch-size", 8, 1, 4096));
  STOKER_ASSIGN_OR_RETURN(o.seconds, args.get_double("seconds", -1, 0.5, 3600));
  STOKER_ASSIGN_OR_RETURN(o.images, args.get_int<int>("images", 0, 1, 100000));
  STOKER_ASSIGN_OR_RETURN(o.max_pixels, args.get_int<int>("max-pixels", o.max_pixels, 3136, kIntMax));
  if (!o.data.empty() && o.model.empty())
    return invalid_argument("--data needs --model (a preset or folder) as for stoker run");
  return o;
}

}  // namespace

int run_bench_scale(int argc, char** argv) {
  auto args = Args::parse(argc, argv,
                          {"workers", "cpu", "gpu-cpu", "rate", "step-ms", "batch-size", "seconds",
                           "images", "max-pixels", "data", "model", "tokenizer", "prefix", "subnet",
                           "out", "size", "stoker"},
                          {"quick", "help"});
  if (!args.ok()) return report("bench scale", args.error());
  if (args->has("help")) {
    std::printf("%s", bench::kScaleHelp);
    return 0;
  }
  auto o = parse(*args);
  if (!o.ok()) return report("bench scale", o.error());
  auto outcome = bench::run_scale_bench(*o);
  if (!outcome.ok()) return report("bench scale", outcome.error());
  return static_cast<int>(*outcome);
}

}  // namespace stoker::cli
