// Whole-file helpers for small local files (configs, test media, generated data).
// Large or remote objects go through io/ (object stores), not here. Blocking; thread-safe.
// Errors: NotFound (missing), PermissionDenied, DataLoss (short read/write), InvalidArgument.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker {

Result<std::vector<std::uint8_t>> read_file(const std::string& path);
Result<std::string> read_text_file(const std::string& path);
// Writes atomically enough for our use: to path + ".tmp", then rename.
Status write_file(const std::string& path, std::span<const std::uint8_t> bytes);
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace stoker
