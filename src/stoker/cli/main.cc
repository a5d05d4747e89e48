// stoker: the command-line entry point. Dispatches to one subcommand per file.
#include <cstdio>
#include <cstring>
#include <string>

#include "stoker/base/printable.h"
#include "stoker/base/version.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_run(int argc, char** argv);  // run_cmd.cc

int run_consume(int argc, char** argv);  // consume_cmd.cc

int run_serve(int argc, char** argv);  // serve_cmd.cc
int run_cluster(int argc, char** argv);  // cluster_cmd.cc

int run_report(int argc, char** argv);  // report_cmd.cc
int run_options(int argc, char** argv);  // options_cmd.cc

namespace {

const Command kCommands[] = {
    {"run", "stream training batches like a trainer: throughput, wait ratio, limiter, errors",
     run_run},
    {"synth", "generate a deterministic synthetic SFT dataset (JSONL + images)", run_synth},
    {"inspect", "preprocess a dataset's images and report sizes, grids, tokens, time", run_inspect},
    {"preprocess", "run the image processor on files; dump resized pixels / pixel_values",
     run_preprocess},
    {"tokenize", "encode text from stdin with a model's tokenizer; print ids", run_tokenize},
    {"render", "render a conversation with the chat template; print text, ids, labels",
     run_render},
    {"bench", "benchmarks against real alternatives (image, ...)", run_bench},
    {"consume", "simulated trainer fed zero-copy by a hand-off server (bench ladder)",
     run_consume},
    {"serve", "node-local server: every local rank's own shard, zero-copy over shared memory",
     run_serve},
    {"cluster", "scale-out under mpirun: receivers feed trainers, workers prepare samples (MPI)",
     run_cluster},
    {"report", "render a run folder (stoker run --report DIR) into PNG plots and an HTML page",
     run_report},
    {"options", "every option of run, serve, cluster, inspect and Python, from the one schema",
     run_options},
};

void usage() {
  std::printf("usage: stoker <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\n`stoker <command> --help` for a command's options; `stoker --version`.\n");
}

}  // namespace

const Command* commands_begin() { return std::begin(kCommands); }
const Command* commands_end() { return std::end(kCommands); }

int report(const char* cmd, const Error& error) {
  std::fprintf(stderr, "stoker %s: %s: %s\n", cmd, std::string(error_code_name(error.code())).c_str(),
               printable(error.to_string()).c_str());  // data in a message: escaped
  return error.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

}  // namespace stoker::cli

int main(int argc, char** argv) {
  using namespace stoker::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::printf("stoker %s\n", std::string(stoker::version()).c_str());
    return 0;
  }
  for (const Command* c = commands_begin(); c != commands_end(); ++c) {
    if (!std::strcmp(argv[1], c->name)) return c->run(argc - 2, argv + 2);
  }
  std::fprintf(stderr, "stoker: unknown command '%s'\n\n", argv[1]);
  usage();
  return 2;
}
