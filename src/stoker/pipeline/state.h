// LoaderState: where a rank's stream stands, resumable by position, not payload: a restart from
// it delivers exactly the samples not yet delivered. Packing / token budgets: position is the
// first sample of a planning window and `packs` the units of that window the job consumed; `plan`
// identifies the plan's options (a resume with other options is refused); `fingerprint` names the
// order the state belongs to (fingerprint.h: data, seed, batch size / packing, max_length, model;
// a resume under another is refused naming the field). Text: "stoker-state v1 epoch=E position=P
// errors=K[ packs=C plan=XXXXXXXX][ mix=SPEC.MODE.G.CURSORS][ fp.NAME=VALUE ...]" (loader_state.cc; untrusted on parse,
// fuzzed; the --state-file file around it: state_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/pipeline/fingerprint.h"

namespace stoker::pipeline {

struct LoaderState {
  std::uint64_t epoch = 0;
  std::uint64_t position = 0;     // samples of this epoch's global order consumed by all ranks
                                  // (failed samples count as consumed: they are never retried)
  std::uint64_t errors = 0;       // error-log cursor: failed samples reported so far (lines of
                                  // the error report; a resumed run keeps that many lines)
  std::uint64_t packs = 0;        // packing: units of the window at `position` consumed
  std::uint32_t plan = 0;         // packing: plan id (0: not a packing state)
  // A mixture's global plan (plan_schedule.h): "SPEC.MODE.G.C0_C1_..." — the plan's spec hash
  // (16 hex digits), mode (e: epochized, w: weighted), the global batch and the per-source
  // cursors (samples planned for the whole job before `position`, which is then the plan's
  // global position). Empty: not a mixture state. At most kMaxMix bytes.
  std::string mix;
  static constexpr std::size_t kMaxMix = 4096;
  Fingerprint fingerprint = {};   // what decided the order (Loader::state() sets it; empty in a
                                  // state written before fingerprints: resumed with a warning)
  std::string serialize() const;  // a few bytes, text
  static Result<LoaderState> parse(std::string_view text);
};

namespace detail {
// A state text in an error message: quoted, its first 40 characters, controls and non-ASCII
// bytes as '?' (a hostile state file never prints as it is).
std::string shown_state_text(std::string_view text);
}  // namespace detail

}  // namespace stoker::pipeline
