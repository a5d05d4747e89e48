// The error report: one JSON line per failed sample, in delivery order —
// {"sample": id, "file": path, "line": n, "stage": "read|parse|validate|fetch|decode|tokenize|
// rope", "code": "DataLoss", "reason": "..."}. On resume the first `keep_lines` lines (the state's
// error cursor) are kept and anything after them (written by a run killed before it saved its
// state) is cut, so every failed sample appears exactly once; a shorter or missing file is kept or
// started as is. Not thread-safe (the consumer
// writes it). Errors: those of opening/writing the file.
// FailureTally groups failures by kind for summaries (`stoker run`, Python stats()): stage, code
// and the reason with its numbers, quoted names and paths masked, each with its count and its
// first sample as the example; and counts them by (stage, code) exactly, whatever the number of
// kinds (the metrics endpoint's failures by code). Not thread-safe (the Loader guards it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/pipeline/failure.h"

namespace stoker::pipeline {

// One report line; the file name and the reason are elided in the middle past these lengths.
inline constexpr std::size_t kMaxReportFileBytes = 1024;
inline constexpr std::size_t kMaxReportReasonBytes = 2048;
std::string failure_json(const SampleFailure& f);

// "record \"synth-7\": 8865 tokens exceed max_length 8192" → "record \"…\": N tokens exceed
// max_length N"; a word with a '/' (a path, a URL) → "PATH".
std::string reason_pattern(const std::string& reason);

struct FailureKind {
  bool other = false;  // the slot that counts every kind past kMaxKinds (stage/code unset)
  FailureStage stage = FailureStage::kRead;
  ErrorCode code = ErrorCode::kDataLoss;
  std::string pattern;
  std::int64_t count = 0;
  // Names for summaries ("" for the `other` slot).
  std::string_view stage_name() const { return other ? "" : failure_stage_name(stage); }
  std::string_view code_name() const { return other ? "" : error_code_name(code); }
  SampleFailure example;  // the first failure of this kind
};

class FailureTally {
 public:
  static constexpr std::size_t kMaxKinds = 64;  // more distinct kinds are counted as "other"
  void add(const SampleFailure& f);
  // The `n` most frequent kinds (ties: first seen first); `other` below them.
  std::vector<FailureKind> top(std::size_t n) const;
  std::int64_t total() const { return total_; }
  using ByStageCode = std::map<std::pair<FailureStage, ErrorCode>, std::int64_t>;
  const ByStageCode& by_stage_code() const { return by_stage_code_; }

 private:
  std::vector<FailureKind> kinds_;  // in first-seen order
  ByStageCode by_stage_code_;       // (stage, code) → count: a few dozen at most
  std::int64_t total_ = 0;
};

class ErrorReport {
 public:
  ErrorReport() = default;
  ~ErrorReport();
  ErrorReport(const ErrorReport&) = delete;
  ErrorReport& operator=(const ErrorReport&) = delete;

  // keep_lines < 0: start a new report (truncate).
  Status open(const std::string& path, std::int64_t keep_lines);
  Status write(const std::vector<SampleFailure>& failures);  // flushed

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace stoker::pipeline
