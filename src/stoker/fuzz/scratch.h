// A per-process scratch folder for targets whose parser reads files (a manifest, a model folder):
// under /dev/shm when it exists (no disk I/O per input), removed at exit.
#pragma once

#include <string>
#include <string_view>

namespace stoker::fuzz {

void make_scratch_dir();          // once, from a target's init
const std::string& scratch_dir();  // after make_scratch_dir()
// Replaces `path` with `bytes` (aborts when it cannot: the harness, not the parser, failed).
void write_file(const std::string& path, std::string_view bytes);
// A seed file `dir`/`name` (for the targets' seeds functions).
inline void write_seed(const std::string& dir, std::string_view name, std::string_view bytes) {
  write_file(dir + "/" + std::string(name), bytes);
}

}  // namespace stoker::fuzz
