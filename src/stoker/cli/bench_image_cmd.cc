// `stoker bench image [--quick]`: flags → bench::run_image_bench (bench/image_bench.h).
#include <sched.h>

#include <cstdio>
#include <limits>

#include "stoker/bench/image_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench image [--quick] [--model M] [--dtype f32|bf16] [--core N] [--photos N]\n"
    "         [--records N] [--warmup N] [--passes N] [--python PY] [--dir DIR]\n"
    "         [--images DIR (a third set: every .jpg/.jpeg/.png/.webp in DIR)]\n"
    "Both sides (stoker, the HF slow processor path in Python) get --warmup untimed passes and\n"
    "the best of --passes timed ones (quick: 1 + 2, else 1 + 3). See bench/README.md.";

Result<bench::ImageBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"model", "core", "python", "dir", "images", "photos", "records",
                              "warmup", "passes", "dtype"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::ImageBenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  if (std::string d = args.get("dtype", "f32"); d == "bf16") {
    o.dtype = image::PixelDType::kBFloat16;
  } else if (d != "f32") {
    return invalid_argument("--dtype: f32 or bf16, not '" + d + "'");
  }
  o.python = args.get("python", o.python);
  o.dir = args.get("dir");
  o.images = args.get("images");
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.photos, args.get_int<int>("photos", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.records, args.get_int<int>("records", 0, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 1000));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", o.quick ? 2 : 3, 1, 1000));
  return o;
}

}  // namespace

int run_bench_image(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench image", o.error());
  auto r = bench::run_image_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench image", r.error());
}

}  // namespace stoker::cli
