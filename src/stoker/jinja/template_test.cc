// Unit tests of the engine's contract that the parity harness (tests/jinja/parity.py, against
// Python jinja2) does not reach: error positions, limits, thread-safety, generation spans in
// bytes, the clock. Expected values are written out by hand from Python's rules.
#include "stoker/jinja/template.h"

#include <gtest/gtest.h>

#include <thread>

#include "stoker/jinja/json.h"

namespace stoker::jinja {
namespace {

std::string render(std::string_view src, const Variables& vars = {}, RenderOptions o = {}) {
  auto t = parse_template(src);
  if (!t.ok()) return "LOAD: " + t.error().message();
  auto r = t->render(vars, o);
  if (!r.ok()) return "RENDER: " + r.error().message();
  return r->text;
}

Value json(std::string_view s) { return parse_json(s).value(); }

TEST(TemplateTest, RendersHfWhitespaceRules) {
  // trim_blocks drops the newline after %}, lstrip_blocks the indentation before {%.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif %}"), "xy");
  EXPECT_EQ(render("a\n"), "a");  // keep_trailing_newline=False
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(TemplateTest, PrintsPythonValues) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.0, {'k': (2,)}] }}"), "[1, 'a', None, True, 1.0, {'k': (2,)}]");
  EXPECT_EQ(render("{{ 1e16 }} {{ 1e-05 }} {{ 0.1 + 0.2 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
            "1e+16 1e-05 0.30000000000000004 -4 2");
  EXPECT_EQ(render("{{ \"it's\" ~ 'x' }}|{{ [\"it's\"] }}"), "it'sx|[\"it's\"]");
}

TEST(TemplateTest, TojsonIsHfs) {
  const Value v = json(R"({"b": [1, 2.5, "é\n"], "a": null})");
  EXPECT_EQ(render("{{ v|tojson }}", {{"v", v}}), R"({"b": [1, 2.5, "é\n"], "a": null})");
  EXPECT_EQ(render("{{ v|tojson(indent=2) }}", {{"v", v}}),
            "{\n  \"b\": [\n    1,\n    2.5,\n    \"é\\n\"\n  ],\n  \"a\": null\n}");
}

TEST(TemplateTest, GenerationSpansAreBytes) {
  auto t = parse_template("é{% generation %}ab€{% endgeneration %}c{% generation %}{% endgeneration %}");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->info().has_generation);
  auto r = t->render({});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "éab€c");
  ASSERT_EQ(r->generation.size(), 2u);
  EXPECT_EQ(r->generation[0], (Span{2, 7}));   // é is 2 bytes, € 3
  EXPECT_EQ(r->generation[1], (Span{8, 8}));
}

TEST(TemplateTest, FirstGenerationBlockBeforeAnyOutputIsNotRecorded) {
  // transformers' tracker is inactive until something was yielded or a span recorded.
  auto r = parse_template("{% generation %}a{% endgeneration %}{% generation %}b{% endgeneration %}")->render({});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->generation.size(), 1u);
  EXPECT_EQ(r->generation[0], (Span{1, 2}));
}

TEST(TemplateTest, StrftimeNowUsesTheInjectedClock) {
  RenderOptions o;
  o.clock = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 6;
    tm.tm_mday = 5;
    tm.tm_wday = 0;
    return tm;
  };
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y, %A') }}", {}, o), "05 Jul 2026, Sunday");
}

TEST(TemplateTest, LaterVariablesOverrideEarlierOnes) {
  EXPECT_EQ(render("{{ x }}", {{"x", Value::integer(1)}, {"x", Value::integer(2)}}), "2");
}

TEST(TemplateTest, SameTemplateRendersOnManyThreads) {
  auto t = parse_template(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.role }}:{{ m.content }};{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  const Value msgs = json(R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])");
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto r = t->render({{"messages", msgs}});
        if (!r.ok() || r->text != "user:a;assistant:b;2") ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(JsonTest, KeepsPythonTypesAndOrder) {
  auto v = parse_json(R"({"z": 1, "a": 1.0, "n": null, "z": 2, "s": "\ud83e\udd80"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(to_json(*v).value(), R"({"z": 2, "a": 1.0, "n": null, "s": "🦀"})");
  EXPECT_FALSE(parse_json(R"("\ud800")").ok());       // lone surrogate
  EXPECT_FALSE(parse_json("\"a\x01\"").ok());          // control character
  EXPECT_FALSE(parse_json("99999999999999999999").ok());
  EXPECT_FALSE(parse_json(std::string(600, '[') + std::string(600, ']')).ok());
  EXPECT_TRUE(parse_json("[NaN, -Infinity]").ok());
}

}  // namespace
}  // namespace stoker::jinja
