// The command line of run, serve, cluster and inspect (and render's media options), through the
// option schema (config/): a flag is an option's `flag`, its value is checked by the option's
// type and range, --help is the table's text. The command files only read Settings and print. Also the one tokenizer rule
// of the commands that take no Loader (render, tokenize).
#pragma once

#include <set>
#include <string>

#include "stoker/base/result.h"
#include "stoker/cli/args.h"
#include "stoker/config/build.h"
#include "stoker/config/settings.h"
#include "stoker/model/model_config.h"

namespace stoker::cli {

// argv (after the command's name) → Settings. `--name value`, `--name=value`, switches without a
// value, list options repeated (`--media-root A --media-root B`), data files as positional
// arguments (one file each: a name with a comma is a file name). A single-valued flag given
// twice, a flag the command does not take, a value that is not of its type or range: an
// InvalidArgument naming the flag (exit status 2). *help: --help was given (nothing else is
// checked then).
Result<config::Settings> parse_command_line(int argc, char** argv, config::Command command,
                                            bool* help);

// A command that has flags of its own besides the schema's (render: its template and grid flags
// next to the schema's media options): the schema's flags of `command` as Args::parse's flag sets
// (merged with the command's own, one parse reads both), then Settings from that Args — each
// value checked by its option's type and range, as parse_command_line checks it.
struct SchemaFlagSets {
  std::set<std::string> values, switches, repeats;
};
SchemaFlagSets schema_flag_sets(config::Command command);
Result<config::Settings> settings_from_args(const Args& args, config::Command command);

// "usage ... options:" text of a command: its own preamble + the table's sections.
std::string options_help(config::Command command);

// Prints the warnings the settings call for (--trust-media-paths: every run, on stderr).
void warn_settings(const config::Settings& settings, const char* command);

// --tokenizer DIR when given, else the model's own: a model folder's files, or for a preset
// the Qwen tokenizer installed with stoker (model::default_tokenizer_dir). The Loader applies
// the same rule itself (pipeline/loader.cc make_context).
Result<std::string> tokenizer_dir_from_flags(const Args& args, const model::ModelConfig& model);

}  // namespace stoker::cli
