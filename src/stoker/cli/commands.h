// The `stoker` subcommands, one file each (cli/<name>_cmd.cc). Each takes the arguments after
// its own name and returns the process exit code (0 ok, 1 failure, 2 usage error).
#pragma once

#include <string>

#include "stoker/base/result.h"

namespace stoker::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// All registered subcommands, in help order. Defined in main.cc.
const Command* commands_begin();
const Command* commands_end();

// Prints "stoker <cmd>: <error>" to stderr and returns 1 (2 for InvalidArgument = usage).
int report(const char* cmd, const Error& error);

int run_synth(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_preprocess(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_render(int argc, char** argv);

}  // namespace stoker::cli
