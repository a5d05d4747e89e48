// jinja_render_tool: renders one template with stoker's engine over a JSONL file of contexts,
// for the parity harness (tests/jinja/parity.py) — the oracle side renders the same lines with
// Python jinja2 under Hugging Face's environment.
//   jinja_render_tool --template FILE --contexts FILE.jsonl [--now 2026-07-26T13:45:00]
//                     [--tokens FILE.jsonl]
// Each context line: {"id": "...", "vars": {name: value, ...}} (the variables exactly as the
// template sees them, in order). Output, one JSON line per context:
//   {"id": ..., "ok": true, "text": "...", "spans": [[begin, end], ...]}   (byte offsets)
//   {"id": ..., "ok": false, "error": "..."}
// --tokens: lines {"id": ..., "offsets": [[begin, end], ...]} (byte offsets of the tokens of the
// reference rendering): each output line then also has "mask" (assistant_mask, tokenizer rule)
// and "mask_processor" (processor rule) computed from stoker's own spans.
// A template that fails to load prints one line {"load_error": "..."} and exits 0.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "stoker/base/file.h"
#include "stoker/base/json_text.h"
#include "stoker/jinja/assistant_mask.h"
#include "stoker/jinja/json.h"
#include "stoker/jinja/template.h"

namespace {

using stoker::jinja::Value;

int usage() {
  std::fprintf(stderr, "usage: jinja_render_tool --template FILE --contexts FILE.jsonl [--now YYYY-MM-DDTHH:MM:SS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tpl_path, ctx_path, now, tokens_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--template") == 0) tpl_path = argv[i + 1];
    else if (std::strcmp(argv[i], "--contexts") == 0) ctx_path = argv[i + 1];
    else if (std::strcmp(argv[i], "--now") == 0) now = argv[i + 1];
    else if (std::strcmp(argv[i], "--tokens") == 0) tokens_path = argv[i + 1];
    else return usage();
  }
  if (tpl_path.empty() || ctx_path.empty()) return usage();
  auto source = stoker::read_text_file(tpl_path);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.error().to_string().c_str());
    return 1;
  }
  stoker::jinja::RenderOptions options;
  if (!now.empty()) {
    std::tm tm{};
    if (strptime(now.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return usage();
    tm.tm_isdst = -1;
    std::tm norm = tm;
    std::time_t t = mktime(&norm);  // fills wday/yday as Python's datetime does
    localtime_r(&t, &norm);
    options.clock = [norm] { return norm; };
  }
  auto tpl = stoker::jinja::parse_template(*source);
  if (!tpl.ok()) {
    std::string line = "{\"load_error\": ";
    stoker::append_json_string(line, tpl.error().message());
    std::printf("%s}\n", line.c_str());
    return 0;
  }
  std::map<std::string, std::vector<stoker::jinja::Span>> tokens;
  if (!tokens_path.empty()) {
    std::ifstream tin(tokens_path);
    std::string tl;
    while (std::getline(tin, tl)) {
      auto rec = stoker::jinja::parse_json(tl);
      if (!rec.ok() || !rec->is_dict()) continue;
      const Value* id = rec->dict().find("id");
      const Value* offs = rec->dict().find("offsets");
      if (id == nullptr || offs == nullptr || !offs->is_list()) continue;
      auto& v = tokens[id->str()];
      for (const auto& o : offs->list().items)
        v.push_back({static_cast<std::size_t>(o.list().items[0].as_int()),
                     static_cast<std::size_t>(o.list().items[1].as_int())});
    }
  }
  std::ifstream in(ctx_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto rec = stoker::jinja::parse_json(line);
    if (!rec.ok() || !rec->is_dict()) {
      std::fprintf(stderr, "bad context line: %s\n", rec.ok() ? "not an object" : rec.error().to_string().c_str());
      return 1;
    }
    const Value* id = rec->dict().find("id");
    const Value* vars = rec->dict().find("vars");
    stoker::jinja::Variables variables;
    if (vars != nullptr && vars->is_dict())
      for (const auto& kv : vars->dict().items) variables.emplace_back(kv.first.str(), kv.second);
    std::string out = "{\"id\": ";
    stoker::append_json_string(out, id != nullptr && id->is_string() ? id->str() : "");
    auto r = tpl->render(variables, options);
    if (r.ok()) {
      out += ", \"ok\": true, \"text\": ";
      stoker::append_json_string(out, r->text);
      out += ", \"spans\": [";
      for (std::size_t i = 0; i < r->generation.size(); ++i) {
        if (i > 0) out += ", ";
        out += "[" + std::to_string(r->generation[i].begin) + ", " + std::to_string(r->generation[i].end) + "]";
      }
      out += "]";
      const auto t = tokens.find(id != nullptr && id->is_string() ? id->str() : "");
      if (t != tokens.end()) {
        for (const auto rule : {stoker::jinja::MaskRule::kTokenizer, stoker::jinja::MaskRule::kProcessor}) {
          const auto mask = stoker::jinja::assistant_mask(r->text, r->generation, t->second, rule);
          out += rule == stoker::jinja::MaskRule::kTokenizer ? ", \"mask\": [" : ", \"mask_processor\": [";
          for (std::size_t i = 0; i < mask.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(mask[i]);
          out += "]";
        }
      }
      out += "}";
    } else {
      out += ", \"ok\": false, \"error\": ";
      stoker::append_json_string(out, r.error().message());
      out += "}";
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}
