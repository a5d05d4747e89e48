#include "stoker/obs/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace stoker::obs {
namespace {

using nlohmann::json;

json parse(const Tracer& t) { return json::parse(t.json()); }

// Spans of each track (tid), in file order.
std::map<int, std::vector<json>> spans_by_tid(const json& doc) {
  std::map<int, std::vector<json>> out;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") out[e["tid"].get<int>()].push_back(e);
  }
  return out;
}

TEST(TraceTest, OneNamedTrackPerThreadWithNestedMonotoneSpans) {
  Tracer t({});
  auto work = [&t](int i) {
    for (int k = 0; k < 50; ++k) {
      Span outer(&t, "outer", "k", k);
      { Span inner(&t, "inner"); }
      { Span inner2(&t, "inner2", "i", i); }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(work, i);
  for (auto& th : threads) th.join();
  t.name_thread("main thread");
  { Span s(&t, "on main"); }
  const json doc = parse(t);
  std::map<int, std::string> names;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"]] = e["args"]["name"];
  }
  const auto tracks = spans_by_tid(doc);
  ASSERT_EQ(tracks.size(), 5u);
  int main_tracks = 0;
  for (const auto& [tid, spans] : tracks) {
    ASSERT_TRUE(names.count(tid)) << "track " << tid << " has no thread_name";
    main_tracks += names[tid] == "main thread";
    // Monotone start times; every span inside the one it started in (a stack of open ends).
    double last = -1;
    std::vector<double> open;
    for (const json& e : spans) {
      const double ts = e["ts"], end = ts + e["dur"].get<double>();
      EXPECT_GE(ts, last);
      last = ts;
      while (!open.empty() && ts >= open.back()) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(end, open.back()) << e.dump();
      }
      open.push_back(end);
    }
    if (names[tid] != "main thread") {
      EXPECT_EQ(spans.size(), 150u);
    }
  }
  EXPECT_EQ(main_tracks, 1);
  EXPECT_EQ(t.recorded(), 4 * 150 + 1);
  EXPECT_EQ(t.dropped(), 0);
}

TEST(TraceTest, CapDropsAndCountsTheRest) {
  Tracer t({.max_events = 100});
  for (int i = 0; i < 1000; ++i) t.span("s", i, i + 1);
  const json doc = parse(t);
  int spans = 0;
  for (const json& e : doc["traceEvents"]) spans += e["ph"] == "X";
  EXPECT_EQ(spans, 100);
  EXPECT_EQ(t.dropped(), 900);
  EXPECT_EQ(doc["otherData"]["dropped_events"], 900);
}

TEST(TraceTest, CapHoldsAcrossThreads) {
  Tracer t({.max_events = 1000});
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&t] {
      for (int k = 0; k < 500; ++k) t.span("s", k, k + 1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(t.recorded(), 1000);
  EXPECT_EQ(t.recorded() + t.dropped(), 4000);
}

TEST(TraceTest, SamplingKeepsEveryNthSampleAndThinsCounters) {
  Tracer t({.sample_every = 4});
  EXPECT_TRUE(t.keeps(0));
  EXPECT_FALSE(t.keeps(1));
  EXPECT_TRUE(t.keeps(8));
  const int id = t.counter_id("bytes");
  EXPECT_EQ(t.counter_id("bytes"), id);
  for (int i = 0; i < 40; ++i) t.counter(id, i, 1000 + i);
  const json doc = parse(t);
  std::vector<int> values;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "C") {
      EXPECT_EQ(e["name"], "bytes");
      values.push_back(e["args"]["value"]);
    }
  }
  EXPECT_EQ(values, (std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28, 32, 36}));
}

TEST(TraceTest, AsyncSpansAreBeginEndPairs) {
  Tracer t({});
  const std::int64_t t0 = now_ns();
  t.async_span("fetch", 7, t0, t0 + 5000);
  const json doc = parse(t);
  std::vector<std::string> phases;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "b" || e["ph"] == "e") {
      phases.push_back(e["ph"]);
      EXPECT_EQ(e["id"], "0x7");
    }
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"b", "e"}));
}

// A Span without a tracer records nothing (tracing off costs a null check): between two real
// spans it adds no event, and the real ones are recorded once each with their argument.
TEST(TraceTest, NullTracerSpanRecordsNothing) {
  Tracer t({});
  {
    Span first(&t, "first", "k", 3);
    Span none(nullptr, "nothing", "k", 4);
    Span last(&t, "last");
  }
  std::vector<std::string> names;
  const json doc = parse(t);
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    names.push_back(e["name"]);
    if (e["name"] == "first") EXPECT_EQ(e["args"]["k"], 3) << e.dump();
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"first", "last"}));
}

TEST(TraceTest, WriteNamesAMissingFolder) {
  Tracer t({});
  Status st = t.write("/nonexistent-folder/x/trace.json");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().to_string().find("/nonexistent-folder/x/trace.json"), std::string::npos);
}

TEST(TraceTest, OptionsAreValidated) {
  EXPECT_FALSE((TraceOptions{.max_events = 0}).validate().ok());
  EXPECT_FALSE((TraceOptions{.sample_every = 0}).validate().ok());
  EXPECT_TRUE(TraceOptions{}.validate().ok());
}

}  // namespace
}  // namespace stoker::obs
