// Where the benchmarks' helper files are: the peer scripts (bench/*.py, bench/*.js) and the npm
// oracles they drive (node_modules: HF's Rust tokenizers, s3rver). ONE lookup, used by every
// benchmark, so an install only has to put the files in one place:
//   1. $STOKER_BENCH_DIR                      (anything: a source checkout's bench/, a copy)
//   2. <dir of the executable>/../share/stoker/bench   (an installed tree: bin/ + share/)
//   3. <dir of the executable>/share/stoker/bench      (the build tree: CMake copies bench/*
//                                                        there and links tools/oracles/node_modules)
// The first of these folders that holds the file wins (each file is looked up on its own, so
// $STOKER_BENCH_DIR may hold only node_modules). No source path is compiled in.
// Thread-safe (reads the environment and /proc/self/exe). Errors: NotFound naming every place
// tried and how to fix it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::bench {

// The candidate folders, in lookup order (those that exist or not).
std::vector<std::filesystem::path> bench_dirs();

// `name` relative to a bench folder ("image_reference.py", "node_modules/tokenizers").
Result<std::filesystem::path> find_bench_file(std::string_view name);

// The folder of the running executable (/proc/self/exe), empty if unknown.
std::filesystem::path executable_dir();

}  // namespace stoker::bench
