// The state file of `stoker run --state-file F` / `--resume F` (issue #28): untrusted input on the
// way in, written atomically on the way out.
//
// Text, two lines:   stoker-state v1 epoch=E position=P errors=K [packs=C plan=X] fp.data=...
//                    batches=N
// line 1 is LoaderState::serialize() (with the order fingerprint, fingerprint.h); line 2 the
// number of delivered-log lines the state covers (cut back to on resume). A file without line 2
// (an older stoker, or a state written by hand) covers 0 batches.
//
// Reading: read_small_file (base/atomic_file.h) — regular files only, at once (a FIFO, /dev/zero,
// a folder are refused before a byte is read), at most kMaxStateFileBytes — then a strict parse:
// every error names the file, the line and the field. Writing: write_file_atomic (temporary +
// fsync + rename + fsync of the folder), so a kill or a full disk never leaves a truncated state;
// a failed write is an error naming the step.
//
// check_state_bounds: what a state may say about a dataset — position within the epoch's order
// (≤ its records), epoch within the run's epochs, errors within the samples consumed so far,
// packs within a planning window — so that a huge number is refused naming the field, not
// resumed silently.
// Pure functions apart from the file I/O; the fuzzer links this file (the `state` target).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/atomic_file.h"
#include "stoker/base/result.h"
#include "stoker/pipeline/state.h"

namespace stoker::pipeline {

inline constexpr std::size_t kMaxStateFileBytes = 64 << 10;

struct SavedRun {
  LoaderState state;
  std::uint64_t batches = 0;  // delivered-log lines the state covers
};

std::string state_file_text(const SavedRun& run);
// Errors: InvalidArgument naming the line and the field.
Result<SavedRun> parse_state_file(std::string_view text);
// read + parse; errors name `path`.
Result<SavedRun> read_state_file(const std::string& path);
Status write_state_file(const std::string& path, const SavedRun& run,
                        const AtomicWriteOptions& options = {});

// What a resumed run knows about its data and options.
struct StateBounds {
  std::uint64_t records = 0;   // samples in one epoch's order
  std::int64_t epochs = 1;     // -1: forever
  std::int64_t pack_window = 0;  // packing / token budgets: samples planned together; 0: none
};
// InvalidArgument naming the field, its value and the bound.
Status check_state_bounds(const LoaderState& s, const StateBounds& b);

}  // namespace stoker::pipeline
