// Where the engine's items come from: an ItemSource yields this rank's samples in delivery
// order. Two sources: Schedule (engine.h; fixed batches of B samples, this rank's strided share
// of the epoch order) and PackSchedule (pack_schedule.h; units — packs or token-budget batches —
// of a global plan every rank computes alike). A unit's items share one UnitInfo: the job's
// state once the unit's step is consumed, the measured failures to report with it, and the
// step's loads over the ranks. Called by one thread at a time (the engine's producer).
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/pipeline/failure.h"
#include "stoker/pipeline/state.h"

namespace stoker::pipeline {

struct Item;

// The loads of one global step (one unit per rank), for the balance report.
struct StepLoad {
  std::int64_t max_tokens = 0, max_patches = 0;
  double mean_tokens = 0, mean_patches = 0;
};

struct UnitInfo {
  std::uint64_t epoch = 0;
  LoaderState after;  // the job's state once this step is consumed (errors: set by the engine)
  // Samples that failed while the plan was measured, reported by every rank with the step that
  // holds the first unit planned after them; `measured` = samples of their windows (seen).
  std::vector<SampleFailure> failures;
  std::uint64_t measured = 0;
  bool repeat = false;  // an epoch-tail repeat: every rank needs a unit in the last step
  std::int64_t tokens = 0, patches = 0, computed = 0;  // as planned
  StepLoad step;
};

class ItemSource {
 public:
  enum class Next { kItem, kNotReady, kEnd };
  virtual ~ItemSource() = default;
  // kNotReady only when !block (the plan is still being measured) or when `stop` fired.
  virtual Next next(bool block, std::stop_token stop, Item* out) = 0;
  // At the end: failures measured after the last unit (and the samples they cover).
  virtual std::vector<SampleFailure> trailing_failures(std::uint64_t* measured) {
    *measured = 0;
    return {};
  }
  // True when every group (Item::group) is one batch of its own, delivered even when all its
  // samples failed (an empty batch): the global plan's steps, so that every rank yields the same
  // number of batches (a rank short of one would hang a collective).
  virtual bool steps() const { return false; }
  // Why the source ended early (a resume state that does not match the data), if it did.
  virtual std::optional<Error> error() const { return std::nullopt; }
};

}  // namespace stoker::pipeline
