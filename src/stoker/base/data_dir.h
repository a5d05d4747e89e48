// Where stoker's run-time data lives: the `share/stoker` folder the build fills (build/share/stoker)
// and `cmake --install` copies (PREFIX/share/stoker), holding what a preset needs at run time (the
// Qwen tokenizer files, tokenizers/<name>/). Found relative to the running binary — the `stoker`
// executable, or the shared object that holds this code (the Python extension) — never through a
// path compiled in, so a tree moved elsewhere still finds its own data. Every caller asks here.
// Blocking (a few stat calls); thread-safe. Errors: NotFound naming where it looked and the remedy.
#pragma once

#include <filesystem>
#include <optional>

#include "stoker/base/result.h"

namespace stoker {

// The environment variable that overrides the lookup: the `share/stoker` folder itself.
inline constexpr char kDataDirEnv[] = "STOKER_DATA_DIR";

// $STOKER_DATA_DIR when set (NotFound when it is not a directory: a typo must not fall back
// silently), else find_data_dir_above(the folder of the running binary).
Result<std::filesystem::path> data_dir();

// The file this code was loaded from: /proc/self/exe for the executable, the shared object's path
// (dladdr) when linked into one; symlinks resolved. Empty when neither can be read.
std::filesystem::path running_binary();

// `<dir>/share/stoker`, then the same under each parent, up to `max_up` parents: the executable
// sits in build/ or PREFIX/bin, the extension in build/python/stoker or
// PREFIX/lib/python3.X/dist-packages/stoker (4 levels below PREFIX).
std::optional<std::filesystem::path> find_data_dir_above(const std::filesystem::path& dir,
                                                         int max_up = 4);

}  // namespace stoker
