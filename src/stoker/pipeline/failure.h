// A sample that failed: which record, where (the record source's name and line), the stage that
// failed it and the error's code — both typed, names only where text is written (the JSONL
// report, summaries, metrics, the cluster wire carries the enums) — and the reason. A value, not
// an error of the run: the engine skips, counts and reports it (pipeline/README.md "Error
// policy"). An outage (storage unreachable at read or fetch) is not bad data: the run stops on
// it, resumably. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::pipeline {

// Where a sample failed. kPlan: packing only — the sample changed between measuring and reading.
enum class FailureStage : std::uint8_t {
  kRead, kParse, kValidate, kFetch, kDecode, kTokenize, kRope, kPlan,
};
inline constexpr int kNumFailureStages = 8;
std::string_view failure_stage_name(FailureStage stage);  // "read", "parse", ...

struct SampleFailure {
  std::uint64_t sample = 0;
  std::string file;        // the record source's name for the record (a manifest as given)
  std::uint64_t line = 0;  // 1-based line (or record number) within it
  FailureStage stage = FailureStage::kRead;
  ErrorCode code = ErrorCode::kDataLoss;
  std::string reason;
};

// A media or record read that failed because storage was unreachable (retries spent) — not a
// property of the sample, so never skipped as bad data: the run stops, resumably.
bool is_outage(const SampleFailure& f);
// The error that stops the job on such a failure: DeadlineExceeded or Unavailable as the failure
// says, naming the sample and its file:line, with `context` (what was being done, how to resume).
Error outage_error(const SampleFailure& f, std::string context);
// "sample 7 (data.jsonl:8) failed at decode: …", for budget and strict-mode stops.
std::string describe_failure(const SampleFailure& f);

}  // namespace stoker::pipeline
