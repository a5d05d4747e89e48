// `stoker bench audio [--quick]`: flags → bench::run_audio_bench (bench/audio_bench.h).
#include <sched.h>

#include "stoker/bench/audio_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench audio [--quick] [--model M] [--core N] [--clips N] [--seconds S]\n"
    "         [--warmup N] [--passes N] [--python PY] [--dir DIR]\n"
    "Speech-like clips (WAV, FLAC, OGG, MP3, M4A) encoded here; stoker's audio path (decode, channel\n"
    "mean, libsoxr HQ, Whisper log-mel) vs librosa.load's rules + transformers' NumPy\n"
    "WhisperFeatureExtractor, on one core (quick: 6 clips of 5 s, 0 warm-up + 1 pass; else 12 of\n"
    "10 s, 1 + 2). --model qwen2-audio | qwen2.5-omni | qwen3-omni (default). See bench/README.md.";

Result<bench::AudioBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv, {"model", "core", "python", "dir", "clips", "seconds", "warmup", "passes"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::AudioBenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  o.python = args.get("python", o.python);
  o.dir = args.get("dir");
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.clips, args.get_int<int>("clips", 0, 1, 10000));
  STOKER_ASSIGN_OR_RETURN(o.seconds, args.get_double("seconds", 0, 0.5, 600));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", o.quick ? 0 : 1, 0, 1000));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", o.quick ? 1 : 2, 1, 1000));
  return o;
}

}  // namespace

int run_bench_audio(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench audio", o.error());
  auto r = bench::run_audio_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench audio", r.error());
}

}  // namespace stoker::cli
