// Whole-file helpers for small local files (configs, test media, generated data).
// Large or remote objects go through io/ (object stores), not here. Blocking; thread-safe.
// Errors: NotFound (missing), PermissionDenied, DataLoss (short read/write), InvalidArgument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker {

// Whole regular files only, bounded: a FIFO, device, socket or folder is InvalidArgument without
// blocking or reading; a file over `max_bytes` is ResourceExhausted before a byte is read (and if
// it grows past it while being read). Model-folder files (config.json, tokenizer.json, chat
// templates) and dataset metadata come through here: every byte of them is input.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{64} << 20;   // configs, tokenizers
inline constexpr std::size_t kMaxFileBytes = std::size_t{1} << 30;        // media, generated data
Result<std::vector<std::uint8_t>> read_file(const std::string& path,
                                            std::size_t max_bytes = kMaxFileBytes);
Result<std::string> read_text_file(const std::string& path,
                                   std::size_t max_bytes = kMaxTextFileBytes);
// Writes atomically enough for our use: to path + ".tmp", then rename.
Status write_file(const std::string& path, std::span<const std::uint8_t> bytes);
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace stoker
