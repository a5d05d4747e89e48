#include "stoker/bench/template_bench.h"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/jinja/chat_variables.h"
#include "stoker/jinja/json.h"
#include "stoker/jinja/template.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;
using jinja::Value;

constexpr char kNow[] = "2026-07-26T13:45:00";

struct Item {
  std::string template_id;
  jinja::Variables vars;
  Value vars_dict;  // the same variables, for the peer
};

struct Pass {
  double wall = 0, cpu = 0;
  std::vector<std::int64_t> digests;  // -1: refused
};

// What the peer sends for the same record: crc32(text) chained with crc32 of json.dumps(spans).
std::int64_t digest(const jinja::Rendered& r) {
  std::uint32_t crc = crc32(r.text.data(), r.text.size());
  std::string spans = "[";
  for (std::size_t i = 0; i < r.generation.size(); ++i) {
    if (i > 0) spans += ", ";
    spans += "[" + std::to_string(r.generation[i].begin) + ", " + std::to_string(r.generation[i].end) + "]";
  }
  spans += "]";
  return crc32(spans.data(), spans.size(), crc);
}

Result<Value> load_json(const fs::path& p) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file(p.string()));
  auto v = jinja::parse_json(text);
  if (!v.ok()) return std::move(v).error().with_context("parsing " + p.string());
  return v;
}

const Value* field(const Value& d, std::string_view k) { return d.is_dict() ? d.dict().find(k) : nullptr; }

// transformers' variables for one context (messages, tools, documents, add_generation_prompt,
// special tokens, kwargs) — the parity harness's hf_variables.
jinja::Variables variables(const Value& tpl, const Value& ctx) {
  jinja::ChatInputs in;
  const Value* m = field(ctx, "messages");
  in.messages = m != nullptr ? *m : Value::list({});
  if (const Value* t = field(ctx, "tools")) in.tools = *t;
  if (const Value* d = field(ctx, "documents")) in.documents = *d;
  if (const Value* g = field(ctx, "add_generation_prompt")) in.add_generation_prompt = jinja::truthy(*g);
  if (const Value* st = field(tpl, "special_tokens"); st != nullptr && st->is_dict())
    for (const auto& [k, v] : st->dict().items)
      if (!v.is_none()) in.special_tokens.emplace_back(k.str(), v);
  if (const Value* kw = field(ctx, "kwargs"); kw != nullptr && kw->is_dict())
    for (const auto& [k, v] : kw->dict().items) in.kwargs.emplace_back(k.str(), v);
  return jinja::chat_variables(in);
}

Value as_dict(const jinja::Variables& vars) {
  auto d = std::make_shared<jinja::DictObj>();
  for (const auto& [k, v] : vars) d->set(Value::string(k), v);
  return Value::dict(std::move(d));
}

Result<std::vector<Pass>> stoker_passes(const std::map<std::string, std::string>& sources,
                                        const std::vector<Item>& items,
                                        const std::vector<std::size_t>& order, const Repeat& repeat) {
  std::map<std::string, std::optional<jinja::Template>> compiled;
  for (const auto& [id, src] : sources) {
    auto t = jinja::parse_template(src);
    compiled[id] = t.ok() ? std::optional<jinja::Template>(std::move(*t)) : std::nullopt;
  }
  std::vector<const jinja::Template*> tpl(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& c = compiled[items[i].template_id];
    tpl[i] = c ? &*c : nullptr;
  }
  jinja::RenderOptions options;
  std::tm now{};
  strptime(kNow, "%Y-%m-%dT%H:%M:%S", &now);
  now.tm_isdst = -1;
  const std::time_t t = mktime(&now);
  localtime_r(&t, &now);
  options.clock = [now] { return now; };
  std::vector<Pass> passes;
  std::vector<Result<jinja::Rendered>> results;
  for (int p = 0; p < repeat.warmup + repeat.passes; ++p) {
    Pass pass;
    results.clear();
    results.reserve(order.size());
    const double c0 = thread_cpu_s();
    const Stopwatch w;
    for (std::size_t i : order) {
      if (tpl[i] == nullptr)
        results.emplace_back(invalid_argument("template refused at load"));
      else
        results.push_back(tpl[i]->render(items[i].vars, options));
    }
    pass.wall = w.elapsed_s();
    pass.cpu = thread_cpu_s() - c0;
    for (const auto& r : results) pass.digests.push_back(r.ok() ? digest(*r) : -1);
    if (p >= repeat.warmup) passes.push_back(std::move(pass));
  }
  return passes;
}

Result<std::vector<Pass>> peer_passes(const TemplateBenchOptions& o, const fs::path& env_dir,
                                      const std::map<std::string, std::string>& sources,
                                      const std::vector<Item>& items,
                                      const std::vector<std::size_t>& order) {
  auto job = std::make_shared<jinja::DictObj>();
  job->set(Value::string("env_dir"), Value::string(env_dir.string()));
  job->set(Value::string("now"), Value::string(kNow));
  auto srcs = std::make_shared<jinja::DictObj>();
  for (const auto& [id, s] : sources) srcs->set(Value::string(id), Value::string(s));
  job->set(Value::string("templates"), Value::dict(srcs));
  std::vector<Value> its, ord;
  for (const auto& it : items) its.push_back(Value::list({Value::string(it.template_id), it.vars_dict}));
  for (std::size_t i : order) ord.push_back(Value::integer(static_cast<std::int64_t>(i)));
  job->set(Value::string("items"), Value::list(std::move(its)));
  job->set(Value::string("order"), Value::list(std::move(ord)));
  job->set(Value::string("warmup"), Value::integer(o.repeat.warmup));
  job->set(Value::string("passes"), Value::integer(o.repeat.passes));
  STOKER_ASSIGN_OR_RETURN(TempDir tmp, TempDir::make("stoker-bench-template"));
  const fs::path job_path = fs::path(tmp.path()) / "job.json";
  STOKER_ASSIGN_OR_RETURN(std::string text, jinja::to_json(Value::dict(job)));
  STOKER_RETURN_IF_ERROR(write_text_file(job_path.string(), text));
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("template_peer.py"));
  STOKER_ASSIGN_OR_RETURN(std::string out,
                          run_capture({o.python, script.string(), job_path.string()}, single_thread_env()));
  auto j = jinja::parse_json(last_json_line(out));
  const Value* ps = j.ok() ? field(*j, "passes") : nullptr;
  if (ps == nullptr || !ps->is_list()) return internal_error("bad peer output: " + out.substr(0, 300));
  std::vector<Pass> passes;
  for (const auto& p : ps->list().items) {
    Pass pass;
    pass.wall = field(p, "seconds")->as_float();
    pass.cpu = field(p, "cpu")->as_float();
    for (const auto& d : field(p, "digests")->list().items) pass.digests.push_back(d.as_int());
    passes.push_back(std::move(pass));
  }
  return passes;
}

const Pass& best(const std::vector<Pass>& passes) {
  const Pass* b = &passes.front();
  for (const Pass& p : passes)
    if (p.cpu < b->cpu) b = &p;
  return *b;
}

}  // namespace

Result<Outcome> run_template_bench(const TemplateBenchOptions& opt_in) {
  TemplateBenchOptions o = opt_in;
  if (o.records == 0) o.records = o.quick ? 600 : 3000;
  fs::path dir = o.corpus_dir;
  if (dir.empty()) {
    STOKER_ASSIGN_OR_RETURN(fs::path corpus, find_bench_file("jinja/corpus.json"));
    dir = corpus.parent_path();
  }
  if (run_capture({o.python, "-c", "import jinja2"}).ok() == false) {
    std::fprintf(stderr, "stoker bench template: skipped: %s cannot import jinja2 (Debian python3-jinja2)\n",
                 o.python.c_str());
    return Outcome::kSkipped;
  }
  STOKER_ASSIGN_OR_RETURN(Value corpus, load_json(dir / "corpus.json"));
  STOKER_ASSIGN_OR_RETURN(Value contexts, load_json(dir / "contexts.json"));
  std::map<std::string, std::string> sources;
  std::vector<Item> items;
  for (const auto& t : field(corpus, "templates")->list().items) {
    const Value* file = field(t, "file");
    if (file == nullptr) continue;  // npm-sourced entries need node_modules: not benchmarked
    const std::string id = field(t, "id")->str();
    STOKER_ASSIGN_OR_RETURN(sources[id], read_text_file((dir / "templates" / file->str()).string()));
    for (const auto& c : field(contexts, "contexts")->list().items) {
      Item it;
      it.template_id = id;
      it.vars = variables(t, c);
      it.vars_dict = as_dict(it.vars);
      items.push_back(std::move(it));
    }
  }
  if (items.empty()) return not_found("no templates in " + dir.string());
  std::vector<std::size_t> order(o.records);
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k % items.size();
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  STOKER_RETURN_IF_ERROR(pin_to_core(core));
  std::printf("corpus: %zu templates x %zu contexts = %zu records (%s), %zu renders per pass, cycled\n",
              sources.size(), items.size() / sources.size(), items.size(), dir.c_str(), order.size());
  std::printf("both sides on CPU %d, %s, templates compiled before timing, the timed loop holds only "
              "the render calls (thread CPU); every record of every timed pass compared (CRC-32 of text + "
              "generation spans, or refused)\n", core, o.repeat.text().c_str());
  std::printf("peer: Python jinja2 (Debian python3-jinja2) in Hugging Face's environment "
              "(ImmutableSandboxedEnvironment, trim/lstrip_blocks, loopcontrols, HF tojson, "
              "generation tracker) via %s; stoker: jinja::Template::render; build: %s\n",
              o.python.c_str(), build_kind());
  std::fflush(stdout);

  STOKER_ASSIGN_OR_RETURN(std::vector<Pass> ours, stoker_passes(sources, items, order, o.repeat));
  fs::path env_dir = dir;
  STOKER_ASSIGN_OR_RETURN(std::vector<Pass> theirs, peer_passes(o, env_dir, sources, items, order));
  Comparison cmp;
  if (ours.size() != theirs.size()) cmp.differ("the peer ran " + std::to_string(theirs.size()) + " passes");
  std::size_t refused = 0;
  for (std::size_t p = 0; p < std::min(ours.size(), theirs.size()); ++p) {
    std::printf("  pass %zu  stoker %.3f s CPU   jinja2 %.3f s CPU\n", p + 1, ours[p].cpu, theirs[p].cpu);
    for (std::size_t k = 0; k < order.size(); ++k) {
      cmp.compared();
      const std::int64_t a = ours[p].digests[k];
      const std::int64_t b = k < theirs[p].digests.size() ? theirs[p].digests[k] : -2;
      if (p == 0 && a == -1) ++refused;
      if (a != b)
        cmp.differ(format("pass %zu record %zu (%s): stoker %lld, jinja2 %lld", p + 1, k,
                          items[order[k]].template_id.c_str(), static_cast<long long>(a),
                          static_cast<long long>(b)));
    }
  }
  const Pass& s = best(ours);
  const Pass& r = best(theirs);
  const double n = static_cast<double>(order.size());
  std::printf("(%zu of %zu renders per pass are refusals by both engines: raise_exception, wrong "
              "content types)\n", refused, order.size());
  std::printf("stoker:  %10.0f records/s  %8.2f us CPU/record\n", n / s.cpu, 1e6 * s.cpu / n);
  std::printf("jinja2:  %10.0f records/s  %8.2f us CPU/record\n", n / r.cpu, 1e6 * r.cpu / n);
  return finish(cmp, "records x timed passes (text + generation spans)", "Python jinja2 (HF env)",
                r.cpu / s.cpu);
}

}  // namespace stoker::bench
