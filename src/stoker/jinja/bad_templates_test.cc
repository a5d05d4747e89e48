// Hostile templates and contexts: every one fails at load or at render with a reason (and a
// line:column), in bounded time and memory — never a crash, never a silent mis-render.
#include <gtest/gtest.h>

#include <chrono>

#include "stoker/jinja/json.h"
#include "stoker/jinja/template.h"

namespace stoker::jinja {
namespace {

std::string load_error(std::string_view src) {
  auto t = parse_template(src);
  return t.ok() ? std::string("loaded") : t.error().message();
}

std::string render_error(std::string_view src, RenderOptions o = {}, const Variables& vars = {}) {
  auto t = parse_template(src);
  if (!t.ok()) return "LOAD " + t.error().message();
  auto r = t->render(vars, o);
  return r.ok() ? std::string("rendered") : r.error().message();
}

TEST(BadTemplateTest, SyntaxErrorsFailAtLoadWithLineAndColumn) {
  EXPECT_EQ(load_error("ab\n{{ 1 + }}"), "template error at 2:8: unexpected end of print statement");
  EXPECT_EQ(load_error("{% if x %}never closed"), "template error at 1:23: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(load_error("{% endfor %}"), "template error at 1:4: encountered unknown tag 'endfor'");
  EXPECT_EQ(load_error("{{ x ) }}"), "template syntax error at 1:6: unexpected ')'");
  EXPECT_EQ(load_error("x\n  {{ 'open }}"), "template syntax error at 2:6: unexpected character '''");
  EXPECT_EQ(load_error("{# never closed"), "template syntax error at 1:1: missing end of comment tag");
  EXPECT_EQ(load_error("{% for x in y %}{% endif %}"), "template error at 1:20: encountered unknown tag 'endif'");
}

TEST(BadTemplateTest, UnsupportedConstructsFailAtLoad) {
  EXPECT_NE(load_error("{% include 'a.jinja' %}").find("'include' tag is not supported"), std::string::npos);
  EXPECT_EQ(load_error("{% do x.append(1) %}"), "template error at 1:4: encountered unknown tag 'do'");
  EXPECT_EQ(load_error("{{ x|nosuch }}"), "template error at 1:6: no filter named 'nosuch'");
  EXPECT_NE(load_error("{{ x|wordwrap }}").find("not supported by stoker"), std::string::npos);
  EXPECT_EQ(load_error("{{ x is nosuch }}"), "template error at 1:9: no test named 'nosuch'");
  EXPECT_EQ(load_error("{% break %}"), "template error at 1:4: 'break' outside of a loop");
  EXPECT_NE(load_error("{% macro m() %}{% generation %}{% endgeneration %}{% endmacro %}")
                .find("Hugging Face records a wrong span"),
            std::string::npos);
  EXPECT_NE(load_error("{% for x in y recursive %}{% endfor %}").find("not supported"), std::string::npos);
  EXPECT_NE(load_error("\xff\xfe").find("not valid UTF-8"), std::string::npos);
  // Fuzz finding (jinja target): a slice inside a subscript tuple reached the interpreter with no
  // object to slice (a null dereference). jinja2 would make a Python slice object; refused here.
  EXPECT_NE(load_error("{{ 'abc'[::-11, 2, 3] }}").find("slice inside a subscript tuple"), std::string::npos);
}

TEST(BadTemplateTest, DeepNestingIsRefusedNotAStackOverflow) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "{% if x %}";
  EXPECT_NE(load_error(deep).find("nests deeper"), std::string::npos);
  EXPECT_NE(load_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nests deeper"),
            std::string::npos);
  EXPECT_NE(load_error("{{ " + std::string(5000, '-') + "1 }}").find("nests deeper"), std::string::npos);
}

TEST(BadTemplateTest, HugeLoopsStopAtTheIterationLimit) {
  RenderOptions o;
  o.limits.max_loop_iterations = 100'000;
  const auto start = std::chrono::steady_clock::now();
  const std::string e = render_error(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", o);
  EXPECT_EQ(e, "template error at 1:32: the render exceeded 100000 loop iterations (RenderLimits::max_loop_iterations)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(render_error("{{ range(10**6)|length }}").find("Range too big"), std::string::npos);
}

TEST(BadTemplateTest, HugeOutputsStopAtTheOutputLimit) {
  RenderOptions o;
  o.limits.max_output_bytes = 1 << 20;
  EXPECT_NE(render_error("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", o).find("output exceeds 1048576 bytes"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'x' * (10 ** 12) }}", o).find("exceeds the output limit"), std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", o)
                .find("exceeds the output limit"),
            std::string::npos);
  EXPECT_NE(render_error("{{ ([1] * 1000000000)|length }}", o).find("RenderLimits::max_items"), std::string::npos);
}

TEST(BadTemplateTest, RunawayRecursionAndWorkAreBounded) {
  EXPECT_NE(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested deeper than 100"),
            std::string::npos);
  RenderOptions o;
  o.limits.max_steps = 100'000;
  EXPECT_NE(render_error("{% for i in range(1000) %}{% for j in range(1000) %}{{ i + j }}{% endfor %}{% endfor %}", o)
                .find("evaluation steps"),
            std::string::npos);
}

TEST(BadTemplateTest, UndefinedMacrosAndValuesFailWithTheirName) {
  EXPECT_EQ(render_error("a\n{{ render_item(x) }}"), "template error at 2:4: UndefinedError: 'render_item' is undefined");
  EXPECT_EQ(render_error("{{ messages[0].content.strip() }}", {}, {{"messages", parse_json("[{}]").value()}}),
            "template error at 1:23: UndefinedError: 'dict object' has no attribute 'content'");
  EXPECT_EQ(render_error("{{ [1].append(2) }}"),
            "template error at 1:7: SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"),
            "template error at 1:19: cannot assign attribute on non-namespace object ('x' is int)");
}

TEST(BadTemplateTest, RaiseExceptionFiredByTheContextIsARenderError) {
  const char* tpl =
      "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
      "{{ raise_exception('Only user and assistant roles are supported, got ' ~ m.role) }}"
      "{% endif %}{{ m.content }}{% endfor %}";
  EXPECT_EQ(render_error(tpl, {}, {{"messages", parse_json(R"([{"role": "user", "content": "a"}])").value()}}),
            "rendered");
  EXPECT_EQ(render_error(tpl, {}, {{"messages", parse_json(R"([{"role": "tool", "content": "a"}])").value()}}),
            "template error at 1:71: raise_exception: Only user and assistant roles are supported, got tool");
}

TEST(BadTemplateTest, TypeErrorsAreReportedAsPythonWouldName) {
  EXPECT_EQ(render_error("{{ 'a' + 1 }}"), "template error at 1:8: TypeError: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render_error("{{ 1 < 'a' }}"), "template error at 1:4: TypeError: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "template error at 1:6: ZeroDivisionError: integer division or modulo by zero");
  EXPECT_EQ(render_error("{% for x in 3 %}{% endfor %}"), "template error at 1:13: TypeError: 'int' object is not iterable");
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}"), "template error at 1:24: integer overflow (stoker holds integers in 64 bits)");
}

}  // namespace
}  // namespace stoker::jinja
