// `stoker bench <what> [--quick]`: dispatches to one benchmark (the harnesses live in the bench
// module, src/stoker/bench/). Every benchmark compares stoker with a named peer in the same run,
// checks that their outputs match, and ends with `ratio: N` (`loader/process: N` for loader) —
// or, when outputs differ, with MISMATCH and exit status 1.
#include <cstdio>
#include <cstring>

#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_bench_image(int argc, char** argv);
int run_bench_tokenizer(int argc, char** argv);
int run_bench_ladder(int argc, char** argv);
int run_bench_torch(int argc, char** argv);
int run_bench_finish(int argc, char** argv);
int run_bench_s3(int argc, char** argv);
int run_bench_loader(int argc, char** argv);
int run_bench_packing(int argc, char** argv);
int run_bench_scale(int argc, char** argv);
int run_bench_video(int argc, char** argv);
int run_bench_template(int argc, char** argv);
int run_bench_audio(int argc, char** argv);
int run_bench_sources(int argc, char** argv);

#if !defined(STOKER_HAVE_BENCH)
int run_bench(int, char**) {
  std::fprintf(stderr, "stoker bench: this build has no benchmarks (configured with "
                       "-DSTOKER_BUILD_BENCH=OFF)\n");
  return 2;
}
#else
int run_bench(int argc, char** argv) {
  struct Entry {
    const char* name;
    const char* summary;
    int (*run)(int, char**);
  };
  static const Entry kBenches[] = {
      {"image", "decode→resize→normalise→patchify (and resize alone): stoker vs the HF slow "
       "processor's Pillow + numpy path", run_bench_image},
      {"tokenizer", "tokens/s: stoker vs Hugging Face's Rust tokenizers (real prose, code, "
       "translations)", run_bench_tokenizer},
      {"ladder", "trainer wait: serial vs concurrent vs prefetch vs zero-copy (shm) loader",
       run_bench_ladder},
      {"torch", "stoker's Python Loader vs torch DataLoader(num_workers=2) + the HF slow image "
       "processor, image-only set", run_bench_torch},
      {"finish", "Loader CPU per image: finish=cpu (float pixel_values) vs finish=device (uint8 "
       "rows + stoker.finish in torch, bit-identical)", run_bench_finish},
      {"s3", "fetch throughput from S3 (s3rver + delaying nginx): stoker vs boto3 + "
       "ThreadPoolExecutor", run_bench_s3},
      {"loader", "CPU per image: pipeline::Loader (no trainer) vs ImageProcessor::process() "
       "alone; the limiter", run_bench_loader},
      {"packing", "padded vs token-budget batches vs packing at L = 4096/8192/16384: efficiency, "
       "rows per epoch, DP balance", run_bench_packing},
      {"scale", "Open MPI scale-out on a one-machine bed: GPU host alone vs + K worker hosts, "
       "packed vs spread, float vs uint8 wire (needs root)", run_bench_scale},
      {"video", "1080p sparse-keyframe videos: stoker vs qwen-vl-utils' torchvision/PyAV path + "
       "the transformers video processor", run_bench_video},
      {"template", "chat-template records/s: stoker's Jinja engine vs Python jinja2 in Hugging "
       "Face's environment (the parity corpus)", run_bench_template},
      {"audio", "decode→16 kHz→Whisper log-mel: stoker vs librosa.load's rules + transformers' "
       "NumPy WhisperFeatureExtractor", run_bench_audio},
      {"sources", "JSONL + files vs WebDataset shards vs Energon folder, local and over delayed HTTP: "
       "stoker vs a tarfile WebDataset reader + the HF slow processor", run_bench_sources},
  };
  if (argc >= 1) {
    for (const Entry& e : kBenches)
      if (!std::strcmp(argv[0], e.name)) return e.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "usage: stoker bench <what> [--quick]\n\n");
  for (const Entry& e : kBenches) std::fprintf(stderr, "  %-10s %s\n", e.name, e.summary);
  return 2;
}
#endif

}  // namespace stoker::cli
