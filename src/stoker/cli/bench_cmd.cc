// `stoker bench <what> [--quick]`: dispatches to the benchmark of one subsystem. Every benchmark
// compares stoker with a real alternative in the same run and ends with a line `ratio: N`.
#include <cstdio>
#include <cstring>

#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_bench_image(int argc, char** argv);
int run_bench_tokenizer(int argc, char** argv);
int run_bench_ladder(int argc, char** argv);
int run_bench_torch(int argc, char** argv);
int run_bench_s3(int argc, char** argv);

int run_bench(int argc, char** argv) {
  struct Entry {
    const char* name;
    const char* summary;
    int (*run)(int, char**);
  };
  static const Entry kBenches[] = {
      {"image", "decode→resize→normalise→patchify: stoker vs Pillow+numpy (HF slow processor)",
       run_bench_image},
      {"tokenizer", "tokens/s: stoker vs Hugging Face's Rust tokenizers", run_bench_tokenizer},
      {"ladder", "trainer wait: serial vs concurrent vs prefetch vs zero-copy (shm) loader",
       run_bench_ladder},
      {"torch", "stoker's Python Loader vs torch DataLoader(num_workers=2) on a pure-Python pipeline",
       run_bench_torch},
      {"s3", "fetch throughput from S3 (s3rver + delaying nginx): 1 in flight vs default concurrency",
       run_bench_s3},
  };
  if (argc >= 1) {
    for (const Entry& e : kBenches)
      if (!std::strcmp(argv[0], e.name)) return e.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "usage: stoker bench <what> [--quick]\n\n");
  for (const Entry& e : kBenches) std::fprintf(stderr, "  %-10s %s\n", e.name, e.summary);
  return 2;
}

}  // namespace stoker::cli
