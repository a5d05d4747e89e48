// `stoker bench tokenizer [--quick]`: flags → bench::run_tokenizer_bench (bench/tokenizer_bench.h).
#include <sched.h>

#include <cstdio>

#include "stoker/bench/tokenizer_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench tokenizer [--quick] [--corpus FILE] [--mb N] [--model M | --tokenizer DIR]\n"
    "         [--warmup 1] [--passes 3] [--core N] [--node PATH]\n"
    "--corpus: a .jsonl file (a JSON string or {\"text\": ...} per line = one document) or UTF-8\n"
    "text (cut into ~4 KB documents at blank lines); default: prose, code and translations read\n"
    "from this machine's files. --mb: corpus size (3 with --quick, 12; with --corpus, at most).\n"
    "Exit 77 (skipped) without node or the npm `tokenizers` module.";

Result<bench::TokenizerBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"model", "tokenizer", "corpus", "node", "core", "mb", "warmup",
                              "passes"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::TokenizerBenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  o.tokenizer = args.get("tokenizer");
  o.corpus = args.get("corpus");
  o.node = args.get("node", o.node);
  STOKER_ASSIGN_OR_RETURN(o.megabytes, args.get_int<std::size_t>("mb", 0, 1, 65536));  // ≤ 64 GiB
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 100));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", 3, 1, 100));
  return o;
}

}  // namespace

int run_bench_tokenizer(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench tokenizer", o.error());
  auto r = bench::run_tokenizer_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench tokenizer", r.error());
}

}  // namespace stoker::cli
