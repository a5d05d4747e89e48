// The option schema: every option of the Loader, `stoker run`, `serve`, `cluster` and `inspect`
// and of Python's Loader(...) / serve(...) declared once (options.cc) — its Python name, CLI
// flag, type, range or choices, default, help, the commands that take it, its environment
// fallback, whether the model folder's stoker.json may set it, and how it lands in Settings.
// The CLI's flags and --help, Python's keyword arguments, their checks and docstrings, and the
// README's option table all come from this table (config/README.md).
// Ranges a machine can honour: some bounds depend on the machine (threads against the cores,
// sizes against the memory) — `hi_for` computes them, once, from Machine::current().
// The table is immutable; every function here is thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::config {

// The entry points an option belongs to (a bit set).
enum Command : std::uint32_t {
  kRun = 1u << 0,       // stoker run
  kServe = 1u << 1,     // stoker serve
  kCluster = 1u << 2,   // stoker cluster (its receivers run `run`'s loop, or `serve` with --serve)
  kInspect = 1u << 3,   // stoker inspect
  kPyLoader = 1u << 4,  // Python stoker.Loader(...)
  kPyServe = 1u << 5,   // Python stoker.serve(...)
  kRender = 1u << 6,    // stoker render (the media and chat-template options; its other flags are its own)
};
using Commands = std::uint32_t;
inline constexpr Commands kCliCommands = kRun | kServe | kCluster | kInspect | kRender;
inline constexpr Commands kPythonCommands = kPyLoader | kPyServe;
// Those that make batches with a Loader (the engine's options).
inline constexpr Commands kLoaderCommands = kRun | kServe | kCluster | kPyLoader | kPyServe;
std::string_view command_name(Command c);  // "run", "serve", ..., "Loader", "serve()", "render"
// Every command, in the order help and the README list them.
inline constexpr Command kAllCommands[] = {kRun, kServe, kCluster, kInspect, kRender, kPyLoader,
                                           kPyServe};

enum class Kind {
  kBool,    // CLI: a switch (no value); Python: True/False; env/stoker.json: 1/0, true/false
  kInt,     // an integer in [lo, hi]
  kUInt,    // an unsigned 64-bit integer (the seed)
  kBytes,   // an integer byte count; CLI/env also with K/M/G/T suffixes
  kNumber,  // a finite number in [dlo, dhi]
  kText,    // a string (model spec, address)
  kPath,    // a file or folder path (Python: str or os.PathLike)
  kList,    // paths/names: CLI repeats the flag (or positionals); Python: one or a list
  kChoice,  // one of `choices`
  kState,   // Python only: a state dict (epoch, position, errors, packs, plan)
};

// Output paths (issue #28): every one is checked for writability when the settings are built
// (build.cc), before any work. kData outputs are what a trainer or a test depends on (the state
// file, the delivered log, the batch hashes): a failed write is an error at that step.
// kDiagnostic ones are for people (trace, report folder, error report, summary JSON): a failed
// write is a warning naming the path and the run's result stands — unless strict_outputs.
enum class Output { kNone, kData, kDiagnostic, kDiagnosticFolder };

// What bounds the machine-dependent ranges: its cores and memory, read once.
struct Machine {
  int cores = 1;                  // CPUs this process may run on
  std::int64_t memory_bytes = 0;  // physical memory
  static const Machine& current();
};

// A bound and, when it comes from the machine, why it is what it is ("4 × 2 cores, at least 64,
// at most 1024"): shown after the range in errors and help.
struct Bound {
  std::int64_t value = 0;
  std::string why;
};

// A value of any kind, as parsed (only the member of its kind is meaningful).
struct Value {
  bool b = false;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  std::string s;                  // kText, kPath, kChoice
  std::vector<std::string> list;  // kList
};

struct Settings;  // settings.h

inline constexpr std::int64_t kNoAlso = std::numeric_limits<std::int64_t>::min();

struct OptionSpec {
  std::string_view name = {};       // Python keyword, stoker.json key, README name
  std::string_view flag = {};       // CLI flag without "--"; empty: not on the command line
  Kind kind = Kind::kText;
  Commands commands = 0;
  std::string_view group = {};      // help section
  std::string_view help = {};
  // Default, as text in the option's own syntax ("8", "1G", "prefetch"); empty: none — the
  // engine decides, as `help` says (e.g. threads 0 = all cores is written "0").
  std::string_view def = {};
  std::string_view def_serve = {};  // the default of `stoker serve` / serve() / cluster --serve
  std::int64_t lo = 0, hi = 0;                 // kInt, kBytes
  double dlo = 0, dhi = 0;                     // kNumber
  Bound (*hi_for)(const Machine&) = nullptr;   // a lower bound than `hi` on this machine
  std::string_view hi_rule = {};                    // hi_for in words, for the README ("4 x cores")
  std::span<const std::string_view> choices = {};   // kChoice
  std::int64_t also = kNoAlso;  // kInt: one value outside [lo, hi] accepted too (epochs -1)
  std::string_view also_means = {};  // what it means ("forever")
  bool nullable = false;        // Python: None accepted (= unset: the default)
  std::string_view switch_sets = {};  // CLI: the flag is a switch setting this choice (--bf16)
  std::int64_t cli_unit = 1;     // CLI: the value counts units of this many bytes (--arena-mb)
  // Python: the same option under a second keyword counting cli_unit units, as the CLI flag does
  // (arena_mb for arena_bytes); its range is the option's, in those units. Giving both is refused.
  std::string_view unit_name = {};
  std::string_view env = {};          // environment fallback, read when the settings are built
  bool model_folder = false;     // the model folder's stoker.json may set it
  bool positional = false;       // CLI: the command's positional arguments
  Output output = Output::kNone;  // an output path: checked at start (Output above)
  void (*set)(Settings&, const Value&) = nullptr;  // null: the front end reads it itself

  bool takes(Command c) const { return (commands & c) != 0; }
  // The upper bound on this machine (kInt/kBytes): hi, or hi_for's when lower.
  Bound upper(const Machine& m) const;
  std::string default_for(Command c, bool serving) const;
};

// The table, in help order.
std::span<const OptionSpec> options();
// By Python name / CLI flag among the options `command` takes; null when there is none.
const OptionSpec* find_option(std::string_view name, Command command);
const OptionSpec* find_flag(std::string_view flag, Command command);
// By the unit keyword (OptionSpec::unit_name) among the options `command` takes; null: none.
const OptionSpec* find_unit_option(std::string_view name, Command command);

// How a front end names an option in messages: "--batch-size" or "batch_size".
enum class Frontend { kCli, kPython };
std::string display_name(const OptionSpec& o, Frontend fe);

}  // namespace stoker::config
