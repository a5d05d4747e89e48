// How a message names an option: the front end that configured this process decides. The CLI
// says "--max-errors", Python says "max_errors" (an error raised from Python names the Python
// argument, not a CLI flag). Code below the front ends (engine, dataset, io) writes
// option_name("max_errors", "--max-errors") wherever a message tells the user which option to
// change; the Python extension calls set_option_style(kPython) when it is imported. The names
// themselves are the option schema's (config/options.cc); this header only picks one of the two.
// Thread-safe (one atomic); the style is set once, before any loader runs.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

enum class OptionStyle { kCli, kPython };

void set_option_style(OptionStyle style);
OptionStyle option_style();

// `python` ("max_errors") or `flag` ("--max-errors"), by the process's style (default: CLI).
std::string option_name(std::string_view python, std::string_view flag);

}  // namespace stoker
