// From what a user gave to Settings, through the schema: Builder takes each option given (a
// flag's text, a Python value already converted) and finish() adds, for every option not given,
// the model folder's stoker.json value, else its environment variable, else its default; parses
// the model folder once; checks the options against each other; and validates the Loader
// config. Errors are InvalidArgument naming the option as the front end spells it ("--prefetch"
// or "prefetch"), the value and the range. One Builder per command invocation.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/config/schema.h"
#include "stoker/config/settings.h"

namespace stoker::config {

// `text` (a flag's value, an environment variable, a stoker.json value) as option `o`'s value,
// checked against its type and range (on `machine`) or choices. `what` names the source in the
// error ("--batch-size", "$WORLD_SIZE", "/m/stoker.json: exif"). kList: one entry.
Result<Value> parse_text(const OptionSpec& o, std::string_view text, std::string_view what,
                         const Machine& machine);
// kInt/kBytes/kNumber: "[lo, hi]" and, when the machine sets the bound, " (why)". `unit`
// divides integer bounds (the CLI's --arena-mb).
std::string range_text(const OptionSpec& o, const Machine& machine, std::int64_t unit = 1);

// Returns the variable's value, or null when unset; std::getenv by default (tests pass a fake).
using EnvLookup = std::function<const char*(const char*)>;

// Option `o`'s environment fallback (its `env`), read and checked as Builder::finish() reads it —
// strictly, naming the variable ("$STOKER_SERVER_UID must be an integer in ...") — or nullopt when
// `o` has none or the variable is unset or empty. For the entries a front end reads itself
// (Python's server_uid) and the clients outside the schema's commands (`stoker consume`).
Result<std::optional<Value>> env_value(const OptionSpec& o, const Machine& machine = Machine::current(),
                                       const EnvLookup& env = {});

class Builder {
 public:
  Builder(Command command, Frontend frontend, const Machine& machine = Machine::current(),
          EnvLookup env = {});

  // The value the user gave for `o` (replaces an earlier one; checked by the caller: parse_text,
  // or the Python conversion). InvalidArgument if `o` is not an option of this command.
  Status set(const OptionSpec& o, const Value& value);
  // The same from text (flags): parse_text naming the option as the front end does.
  Status set_text(const OptionSpec& o, std::string_view text);

  // Model folder, environment and defaults for the rest; the cross-checks; the Loader config
  // validated (commands that make batches; Python's Loader checks `data` itself).
  Result<Settings> finish();

  const Machine& machine() const { return machine_; }
  Frontend frontend() const { return frontend_; }

 private:
  void assign(const OptionSpec& o, const Value& value);  // setter + values_
  Status apply_model_folder(const std::string& folder);
  Status cross_check() const;
  Status check_outputs() const;  // output paths writable (issue #28)
  std::string name(std::string_view option) const;  // display name of an option of this command
  std::string on(std::string_view option) const;    // a switch turned on: "--packing", "packing=True"
  const Value* value(std::string_view option) const;  // its value (given, folder, env, default)
  bool given(std::string_view option) const;          // given explicitly (flag / keyword)

  Command command_;
  Frontend frontend_;
  Machine machine_;
  EnvLookup env_;
  Settings settings_;
  std::map<const OptionSpec*, Value> values_;
  std::set<const OptionSpec*> from_folder_;
};

// `stoker <command> --help`'s option sections, from the table.
std::string help_text(Command command);
// The README's option table (markdown), from the table.
std::string markdown_table();

}  // namespace stoker::config
