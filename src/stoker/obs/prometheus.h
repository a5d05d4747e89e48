// MetricText: a Prometheus text exposition (format 0.0.4) built family by family. Families come
// out in the order first added, each with one HELP and one TYPE line and all its samples together
// (whichever order they were added in: the format requires it); a histogram gives cumulative
// `_bucket{le=...}` lines ending with le="+Inf", then `_sum` and `_count`. Label values and help
// text are escaped as the format says. Names must match [a-zA-Z_:][a-zA-Z0-9_:]* (checked: a bad
// name is a programmer error). A plain value; not thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "stoker/obs/histogram.h"

namespace stoker::obs {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricText {
 public:
  void gauge(const std::string& name, const std::string& help, const Labels& labels, double v);
  // `name` ends in _total (the convention for counters).
  void counter(const std::string& name, const std::string& help, const Labels& labels, double v);
  void histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const HistogramSnapshot& h);
  std::string str() const;

 private:
  struct Family {
    std::string name, type, help;
    std::vector<std::string> lines;
  };
  Family& family(const std::string& name, const char* type, const std::string& help);
  std::vector<Family> families_;
};

// A float as the format writes it: shortest round-trip text, NaN, +Inf, -Inf.
std::string format_value(double v);

}  // namespace stoker::obs
