#include "stoker/pipeline/error_report.h"

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string_view>

#include "stoker/base/elide.h"
#include "stoker/base/json_text.h"

namespace stoker::pipeline {

std::string failure_json(const SampleFailure& f) {
  // Bounded whatever the data (base/elide.h): a line of the report is at most a few KiB.
  return "{\"sample\": " + std::to_string(f.sample) + ", \"file\": " +
         json_string(elide_middle(f.file, kMaxReportFileBytes)) + ", \"line\": " +
         std::to_string(f.line) + ", \"stage\": " + json_string(failure_stage_name(f.stage)) +
         ", \"code\": " + json_string(error_code_name(f.code)) +
         ", \"reason\": " + json_string(elide_middle(f.reason, kMaxReportReasonBytes)) + "}";
}

std::string reason_pattern(const std::string& reason) {
  std::string out;
  std::size_t i = 0;
  const std::size_t n = reason.size();
  while (i < n) {
    const char c = reason[i];
    if (c == '"') {  // a quoted name: its content says which sample, not what went wrong
      const std::size_t close = reason.find('"', i + 1);
      if (close == std::string::npos) {
        out += reason.substr(i);
        break;
      }
      out += "\"…\"";
      i = close + 1;
    } else if (c == ' ' || i == 0) {
      // A word holding a '/' (a path or URL, up to the next space; a trailing ':' or ',' kept).
      const std::size_t start = c == ' ' ? i + 1 : i;
      std::size_t end = reason.find(' ', start);
      if (end == std::string::npos) end = n;
      std::size_t word_end = end;
      while (word_end > start && (reason[word_end - 1] == ':' || reason[word_end - 1] == ',')) {
        --word_end;
      }
      const std::string_view word(reason.data() + start, word_end - start);
      if (word.find('/') != std::string_view::npos && word.find('"') == std::string_view::npos) {
        if (c == ' ') out += ' ';
        out += "PATH";
        out.append(reason, word_end, end - word_end);
        i = end;
      } else {
        out += c;
        ++i;
      }
    } else if (c >= '0' && c <= '9') {
      auto digit = [&](std::size_t j) { return j < n && reason[j] >= '0' && reason[j] <= '9'; };
      while (digit(i) || (reason[i] == '.' && digit(i + 1))) ++i;  // 12, 0.25 (not "12.")
      out += 'N';
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

void FailureTally::add(const SampleFailure& f) {
  ++total_;
  ++by_stage_code_[{f.stage, f.code}];
  std::string pattern = reason_pattern(f.reason);
  for (FailureKind& k : kinds_) {
    if (!k.other && k.stage == f.stage && k.code == f.code && k.pattern == pattern) {
      ++k.count;
      return;
    }
  }
  if (kinds_.size() + 1 >= kMaxKinds) {  // the last slot collects everything else
    if (kinds_.size() + 1 == kMaxKinds) {
      kinds_.push_back({.other = true, .pattern = "(other kinds)", .example = f});
    }
    ++kinds_.back().count;
    return;
  }
  kinds_.push_back({.stage = f.stage, .code = f.code, .pattern = std::move(pattern), .count = 1,
                    .example = f});
}

std::vector<FailureKind> FailureTally::top(std::size_t n) const {
  std::vector<FailureKind> out = kinds_;
  std::stable_sort(out.begin(), out.end(),
                   [](const FailureKind& a, const FailureKind& b) { return a.count > b.count; });
  if (out.size() > n) out.resize(n);
  return out;
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
  if (std::fflush(file_) != 0) {
    return data_loss("writing error report " + path_ + ": " + std::strerror(errno));
  }
  return ok_status();
}

}  // namespace stoker::pipeline
