// `stoker options`: the option schema as text — every option of run, serve, cluster, inspect,
// render (its media options) and Python's Loader / serve, with its type, range, default,
// commands, environment fallback and meaning. --markdown prints the README's table
// (tests/python/test_options_table.py checks the README holds exactly this); otherwise one
// command's --help sections (--command NAME).
#include <cstdio>
#include <cstring>
#include <string>

#include "stoker/cli/commands.h"
#include "stoker/config/build.h"

namespace stoker::cli {

int run_options(int argc, char** argv) {
  if (argc == 0 || (argc == 1 && !std::strcmp(argv[0], "--markdown"))) {
    std::fputs(config::markdown_table().c_str(), stdout);
    return 0;
  }
  if (argc == 2 && !std::strcmp(argv[0], "--command")) {
    for (config::Command c : config::kAllCommands) {
      if ((c & config::kCliCommands) == 0) continue;
      if (config::command_name(c) == argv[1]) {
        std::fputs(config::help_text(c).c_str(), stdout);
        return 0;
      }
    }
  }
  std::fputs("usage: stoker options [--markdown | --command run|serve|cluster|inspect|render]\n",
             stderr);
  return 2;
}

}  // namespace stoker::cli
