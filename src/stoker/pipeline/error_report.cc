#include "stoker/pipeline/error_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stoker/base/json_text.h"

namespace stoker::pipeline {

std::string failure_json(const SampleFailure& f) {
  return "{\"sample\": " + std::to_string(f.sample) + ", \"file\": " + json_string(f.file) +
         ", \"line\": " + std::to_string(f.line) + ", \"stage\": " + json_string(f.stage) +
         ", \"code\": " + json_string(f.code) + ", \"reason\": " + json_string(f.reason) + "}";
}

ErrorReport::~ErrorReport() {
  if (file_ != nullptr) std::fclose(file_);
}

Status ErrorReport::open(const std::string& path, std::int64_t keep_lines) {
  path_ = path;
  if (keep_lines < 0) {
    file_ = std::fopen(path.c_str(), "w");
  } else {
    file_ = std::fopen(path.c_str(), "r+");
    if (file_ == nullptr && errno == ENOENT) file_ = std::fopen(path.c_str(), "w+");
    if (file_ != nullptr) {
      // Keep `keep_lines` lines; cut what a killed run wrote after its last saved state.
      std::int64_t lines = 0;
      long cut = 0;
      int c;
      while (lines < keep_lines && (c = std::fgetc(file_)) != EOF) {
        if (c == '\n') ++lines;
      }
      cut = std::ftell(file_);
      // Fewer lines than the cursor (the report was moved or started later): keep them all;
      // the report is a log, losing the training run over it would be wrong.
      std::fflush(file_);
      if (ftruncate(fileno(file_), cut) != 0 || std::fseek(file_, cut, SEEK_SET) != 0) {
        std::fclose(file_);
        file_ = nullptr;
        return unavailable("cutting error report " + path + ": " + std::strerror(errno));
      }
    }
  }
  if (file_ == nullptr) {
    std::string msg = "opening error report " + path + ": " + std::strerror(errno);
    return errno == EACCES ? permission_denied(msg) : not_found(msg);
  }
  return ok_status();
}

Status ErrorReport::write(const std::vector<SampleFailure>& failures) {
  if (file_ == nullptr || failures.empty()) return ok_status();
  for (const SampleFailure& f : failures) {
    std::string line = failure_json(f) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) {
      return data_loss("writing error report " + path_ + ": " + std::strerror(errno));
    }
  }
  if (std::fflush(file_) != 0) return data_loss("flushing error report " + path_);
  return ok_status();
}

}  // namespace stoker::pipeline
