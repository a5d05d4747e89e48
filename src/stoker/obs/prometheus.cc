#include "stoker/obs/prometheus.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "stoker/base/result.h"

namespace stoker::obs {
namespace {

bool valid_name(const std::string& n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string escape(const std::string& s, bool quotes) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quotes) out += "\\\"";
    else out += c;
  }
  return out;
}

std::string label_text(const Labels& labels, const std::string& le = {}) {
  if (labels.empty() && le.empty()) return {};
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    STOKER_CHECK(valid_name(k) && k.find(':') == std::string::npos, "bad Prometheus label name");
    if (!first) s += ",";
    s += k + "=\"" + escape(v, true) + "\"";
    first = false;
  }
  if (!le.empty()) s += std::string(first ? "" : ",") + "le=\"" + le + "\"";
  return s + "}";
}

}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

MetricText::Family& MetricText::family(const std::string& name, const char* type,
                                       const std::string& help) {
  STOKER_CHECK(valid_name(name), "bad Prometheus metric name");
  for (Family& f : families_) {
    if (f.name == name) {
      STOKER_CHECK(f.type == type, "one Prometheus metric name with two types");
      return f;
    }
  }
  families_.push_back({name, type, help, {}});
  return families_.back();
}

void MetricText::gauge(const std::string& name, const std::string& help, const Labels& labels,
                       double v) {
  family(name, "gauge", help).lines.push_back(name + label_text(labels) + " " + format_value(v));
}

void MetricText::counter(const std::string& name, const std::string& help, const Labels& labels,
                         double v) {
  STOKER_CHECK(name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0,
               "a Prometheus counter's name ends in _total");
  family(name, "counter", help).lines.push_back(name + label_text(labels) + " " + format_value(v));
}

void MetricText::histogram(const std::string& name, const std::string& help, const Labels& labels,
                           const HistogramSnapshot& h) {
  Family& f = family(name, "histogram", help);
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    const std::string le = i < h.bounds.size() ? format_value(h.bounds[i]) : "+Inf";
    f.lines.push_back(name + "_bucket" + label_text(labels, le) + " " +
                      format_value(static_cast<double>(cumulative)));
  }
  f.lines.push_back(name + "_sum" + label_text(labels) + " " + format_value(h.sum_s));
  f.lines.push_back(name + "_count" + label_text(labels) + " " +
                    format_value(static_cast<double>(cumulative)));
}

std::string MetricText::str() const {
  std::string out;
  for (const Family& f : families_) {
    out += "# HELP " + f.name + " " + escape(f.help, false) + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const std::string& l : f.lines) out += l + "\n";
  }
  return out;
}

double HistogramSnapshot::quantile_bound(double q) const {
  if (count <= 0) return 0;
  const double want = q * static_cast<double>(count);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (static_cast<double>(seen) >= want && seen > 0) {
      return i < bounds.size() ? bounds[i] : bounds.back();
    }
  }
  return bounds.back();
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot s;
  s.bounds.assign(kLatencyBounds.begin(), kLatencyBounds.end());
  for (const auto& c : counts_) {
    s.counts.push_back(c.load(std::memory_order_relaxed));
    s.count += s.counts.back();
  }
  s.sum_s = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

}  // namespace stoker::obs
