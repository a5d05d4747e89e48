#include "stoker/pipeline/failure.h"

namespace stoker::pipeline {

std::string_view failure_stage_name(FailureStage stage) {
  switch (stage) {
    case FailureStage::kRead: return "read";
    case FailureStage::kParse: return "parse";
    case FailureStage::kValidate: return "validate";
    case FailureStage::kFetch: return "fetch";
    case FailureStage::kDecode: return "decode";
    case FailureStage::kTokenize: return "tokenize";
    case FailureStage::kRope: return "rope";
    case FailureStage::kPlan: return "plan";
  }
  return "?";
}

bool is_outage(const SampleFailure& f) {
  return (f.stage == FailureStage::kFetch || f.stage == FailureStage::kRead) &&
         (f.code == ErrorCode::kUnavailable || f.code == ErrorCode::kDeadlineExceeded);
}

Error outage_error(const SampleFailure& f, std::string context) {
  return Error(f.code == ErrorCode::kDeadlineExceeded ? ErrorCode::kDeadlineExceeded
                                                      : ErrorCode::kUnavailable,
               "sample " + std::to_string(f.sample) + " (" + f.file + ":" + std::to_string(f.line) +
                   "): " + f.reason)
      .with_context(std::move(context));
}

std::string describe_failure(const SampleFailure& f) {
  return "sample " + std::to_string(f.sample) + " (" + f.file + ":" + std::to_string(f.line) +
         ") failed at " + std::string(failure_stage_name(f.stage)) + ": " + f.reason;
}

}  // namespace stoker::pipeline
