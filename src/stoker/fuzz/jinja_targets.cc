// The jinja target: a chat template and a render context from arbitrary bytes. Input = template
// source, "\n#CTX#\n", a JSON object of variables (when absent or not JSON: a fixed chat context).
// parse_template -> render under tight limits -> the generation spans -> assistant_mask over a
// synthetic tokenisation; parse_json -> to_json -> parse_json round trip of the context.
// Seeds: small templates written here that use every construct; make_seeds.py adds the real
// templates of tests/jinja/templates with the parity contexts.
#include <algorithm>
#include <fstream>
#include <string>

#include "stoker/fuzz/targets.h"
#include "stoker/jinja/assistant_mask.h"
#include "stoker/jinja/json.h"
#include "stoker/jinja/template.h"

namespace stoker::fuzz {
namespace {

using jinja::Value;

constexpr char kDefaultContext[] =
    R"({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "image"}, )"
    R"({"type": "text", "text": "hi \u00e9"}]}, {"role": "assistant", "content": "<think>r</think>ok", )"
    R"("tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}, )"
    R"({"role": "tool", "name": "f", "content": "{\"r\": 2}"}], "tools": [{"type": "function", )"
    R"("function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}], )"
    R"("add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})";

void run_jinja(const std::uint8_t* data, std::size_t size) {
  const auto [source, ctx_text] = split2(as_text(data, size), "\n#CTX#\n");
  auto tpl = jinja::parse_template(source);
  check_error_named(tpl);
  if (!tpl.ok()) return;
  auto ctx = jinja::parse_json(ctx_text);
  check_error_named(ctx);
  if (!ctx.ok() || !ctx->is_dict()) ctx = jinja::parse_json(kDefaultContext);
  check(ctx.ok(), "the default context parses");
  // JSON round trip: what the engine prints with tojson reads back as the same value.
  auto dumped = jinja::to_json(*ctx);
  check(dumped.ok(), "a parsed JSON value serialises");
  auto again = jinja::parse_json(*dumped);
  check(again.ok(), "to_json's output parses");
  auto redumped = jinja::to_json(*again);
  check(redumped.ok() && *redumped == *dumped, "to_json(parse_json(to_json(v))) == to_json(v)");

  jinja::Variables vars;
  for (const auto& [k, v] : ctx->dict().items) vars.emplace_back(k.str(), v);
  jinja::RenderOptions o;
  o.limits.max_output_bytes = 64 << 10;
  o.limits.max_loop_iterations = 20'000;
  o.limits.max_steps = 200'000;
  o.limits.max_call_depth = 20;
  o.limits.max_items = 20'000;
  o.clock = [] {
    std::tm tm{};
    tm.tm_year = 126;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    return tm;
  };
  auto r = tpl->render(vars, o);
  check_error_named(r);
  if (!r.ok()) return;
  check(r->text.size() <= o.limits.max_output_bytes, "output within the limit");
  std::size_t prev = 0;
  for (const auto& s : r->generation) {
    check(s.begin <= s.end && s.end <= r->text.size(), "a generation span lies in the text");
    check(s.begin >= prev, "generation spans in output order");
    prev = s.begin;
  }
  // A synthetic tokenisation (3-byte pieces): one flag per token, each 0 or 1.
  std::vector<jinja::Span> toks;
  for (std::size_t b = 0; b < r->text.size(); b += 3) toks.push_back({b, std::min(b + 3, r->text.size())});
  for (auto rule : {jinja::MaskRule::kTokenizer, jinja::MaskRule::kProcessor}) {
    const auto mask = jinja::assistant_mask(r->text, r->generation, toks, rule);
    check(mask.size() == toks.size(), "one mask flag per token");
    for (auto m : mask) check(m <= 1, "mask flags are 0 or 1");
  }
}

void jinja_seeds(const std::string& dir) {
  const char* const kSeeds[] = {
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content if m.content is string else "
      "m.content|map(attribute='text')|join }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}"
      "<|im_start|>assistant\n{% endif %}",
      "{%- set ns = namespace(n=0, seen=[]) -%}{%- for m in messages[::-1] if m.role != 'tool' -%}"
      "{%- set ns.n = ns.n + loop.index0 -%}{%- set ns.seen = ns.seen + [m.role] -%}{%- endfor -%}"
      "{{ ns.n }} {{ ns.seen|unique|list|tojson }} {{ tools|tojson(indent=2) }}",
      "{% macro r(x, d=1) %}{% if x is mapping %}{% for k, v in x|items %}{{ k }}={{ r(v, d + 1) }},"
      "{% endfor %}{% elif x is iterable and x is not string %}[{% for y in x %}{{ r(y, d) }}{% endfor %}]"
      "{% else %}{{ x }}{% endif %}{% endmacro %}{{ r(messages) }}",
      "{{ bos_token }}{% generation %}{{ '%s|%d'|format(eos_token, 3) }}{% endgeneration %}"
      "{%- raw %}{{ raw }}{% endraw -%}{# c #}{{ strftime_now('%d %b %Y') }}",
      "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content.split('</think>')[-1]"
      ".strip() }}{{ eos_token }}{% endgeneration %}{% else %}{{ m.role|upper }}{% endif %}"
      "{% if loop.last %}{% break %}{% endif %}{% endfor %}",
      "{% set x %}{{ 'a' * 3 }}{% endset %}{% filter upper %}{{ x ~ (1, 2.5, none, true)|string }}"
      "{% endfilter %}{% call(v) caller_test(1) %}{{ v }}{% endcall %}{{ raise_exception('no') if false }}",
  };
  int i = 0;
  for (const char* s : kSeeds) {
    std::ofstream(dir + "/seed" + std::to_string(i++)) << s;
    std::ofstream(dir + "/seed" + std::to_string(i++)) << s << "\n#CTX#\n" << kDefaultContext;
  }
}

}  // namespace

const Target kJinjaTarget{"jinja", "chat template + context -> parse_template -> render (tight limits) -> spans -> assistant_mask; JSON round trip",
                          nullptr, run_jinja, jinja_seeds};

}  // namespace stoker::fuzz
