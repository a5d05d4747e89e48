#include "stoker/obs/prometheus.h"

#include <gtest/gtest.h>

#include <sstream>

namespace stoker::obs {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(PrometheusTest, FamiliesStayTogetherWithOneHelpAndType) {
  MetricText m;
  m.counter("x_total", "X things.", {{"rank", "0"}}, 3);
  m.gauge("g", "A gauge.", {}, 0.5);
  m.counter("x_total", "X things.", {{"rank", "1"}}, 4);
  EXPECT_EQ(m.str(),
            "# HELP x_total X things.\n# TYPE x_total counter\n"
            "x_total{rank=\"0\"} 3\nx_total{rank=\"1\"} 4\n"
            "# HELP g A gauge.\n# TYPE g gauge\ng 0.5\n");
}

TEST(PrometheusTest, HistogramBucketsAreCumulativeAndEndWithInf) {
  Histogram h;
  h.record_ns(30'000);         // 30 µs: first bucket (le 5e-05)
  h.record_ns(2'000'000);      // 2 ms: le 0.0025
  h.record_ns(20'000'000'000); // 20 s: +Inf only
  MetricText m;
  m.histogram("lat_seconds", "Latency.", {{"stage", "read"}}, h.snapshot());
  const auto lines = lines_of(m.str());
  ASSERT_EQ(lines.size(), 2 + 18 + 2u);
  EXPECT_EQ(lines[2], "lat_seconds_bucket{stage=\"read\",le=\"5e-05\"} 1");
  EXPECT_EQ(lines[7], "lat_seconds_bucket{stage=\"read\",le=\"0.0025\"} 2");
  EXPECT_EQ(lines[18], "lat_seconds_bucket{stage=\"read\",le=\"10\"} 2");
  EXPECT_EQ(lines[19], "lat_seconds_bucket{stage=\"read\",le=\"+Inf\"} 3");
  EXPECT_EQ(lines[20], "lat_seconds_sum{stage=\"read\"} 20.00203");
  EXPECT_EQ(lines[21], "lat_seconds_count{stage=\"read\"} 3");
}

TEST(PrometheusTest, EscapesLabelValuesAndHelp) {
  MetricText m;
  m.gauge("g", "back\\slash\nnewline", {{"reason", "a \"q\" \\ \n"}}, 1);
  EXPECT_EQ(m.str(), "# HELP g back\\\\slash\\nnewline\n# TYPE g gauge\n"
                     "g{reason=\"a \\\"q\\\" \\\\ \\n\"} 1\n");
}

TEST(PrometheusTest, ValuesRoundTrip) {
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_value(1e300 * 1e300), "+Inf");
  EXPECT_EQ(format_value(12345678), "12345678");
}

TEST(PrometheusTest, QuantileBound) {
  Histogram h;
  for (int i = 0; i < 99; ++i) h.record_ns(1'000'000);  // 1 ms
  h.record_ns(3'000'000'000);                           // 3 s
  const HistogramSnapshot s = h.snapshot();
  EXPECT_DOUBLE_EQ(s.quantile_bound(0.5), 1e-3);
  EXPECT_DOUBLE_EQ(s.quantile_bound(1.0), 5);
}

}  // namespace
}  // namespace stoker::obs
