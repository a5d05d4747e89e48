// The error report: one JSON line per failed sample, in delivery order —
// {"sample": id, "file": path, "line": n, "stage": "read|parse|validate|fetch|decode|tokenize|
// rope", "code": "DataLoss", "reason": "..."}. On resume the first `keep_lines` lines (the state's
// error cursor) are kept and anything after them (written by a run killed before it saved its
// state) is cut, so every failed sample appears exactly once; a shorter or missing file is kept or
// started as is. Not thread-safe (the consumer
// writes it). Errors: those of opening/writing the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::pipeline {

struct SampleFailure {
  std::uint64_t sample = 0;
  std::string file;
  std::uint64_t line = 0;
  std::string stage;
  std::string code;
  std::string reason;
};

std::string failure_json(const SampleFailure& f);

class ErrorReport {
 public:
  ErrorReport() = default;
  ~ErrorReport();
  ErrorReport(const ErrorReport&) = delete;
  ErrorReport& operator=(const ErrorReport&) = delete;

  // keep_lines < 0: start a new report (truncate).
  Status open(const std::string& path, std::int64_t keep_lines);
  Status write(const std::vector<SampleFailure>& failures);  // flushed
  bool is_open() const { return file_ != nullptr; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace stoker::pipeline
