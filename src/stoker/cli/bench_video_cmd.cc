// `stoker bench video [--quick]`: flags → bench::run_video_bench (bench/video_bench.h).
#include <sched.h>

#include "stoker/bench/video_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench video [--quick] [--model M] [--core N] [--videos N] [--seconds S]\n"
    "         [--gop FRAMES] [--fps F] [--warmup N] [--passes N] [--python PY] [--dir DIR]\n"
    "1080p H.264 (B-frames, a keyframe every --gop frames, default 300 = 10 s) encoded here; stoker's\n"
    "video path vs qwen-vl-utils' torchvision/PyAV path + the transformers video processor, on one\n"
    "core (quick: 2 videos of 3 s, 0 warm-up + 1 pass; else 4 of 6 s, 1 + 2). See bench/README.md.";

Result<bench::VideoBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"model", "core", "python", "dir", "videos", "seconds", "gop", "fps",
                              "warmup", "passes"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::VideoBenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  o.python = args.get("python", o.python);
  o.dir = args.get("dir");
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.videos, args.get_int<int>("videos", 0, 1, 1000));
  STOKER_ASSIGN_OR_RETURN(o.seconds, args.get_double("seconds", 0, 0.5, 600));
  STOKER_ASSIGN_OR_RETURN(o.gop, args.get_int<int>("gop", 300, 1, 100000));
  STOKER_ASSIGN_OR_RETURN(o.fps, args.get_double("fps", 2.0, 0.01, 60));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", o.quick ? 0 : 1, 0, 1000));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", o.quick ? 1 : 2, 1, 1000));
  return o;
}

}  // namespace

int run_bench_video(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench video", o.error());
  auto r = bench::run_video_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench video", r.error());
}

}  // namespace stoker::cli
