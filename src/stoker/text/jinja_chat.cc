#include "stoker/text/jinja_chat.h"

#include <utility>

#include "stoker/base/json_text.h"
#include "stoker/jinja/chat_variables.h"
#include "stoker/jinja/json.h"

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Message;
using dataset::Part;
using jinja::Value;

std::string record_name(const std::string& id) {
  return id.empty() ? std::string("record") : "record \"" + id + "\"";
}

Value str(std::string s) { return Value::string(std::move(s)); }

std::string quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::shared_ptr<jinja::DictObj> part_dict(const Part& p) {
  auto d = std::make_shared<jinja::DictObj>();
  switch (p.kind) {
    case Part::Kind::kText:
      d->set(str("type"), str("text"));
      d->set(str("text"), str(p.value));
      break;
    case Part::Kind::kImage:
      d->set(str("type"), str("image"));
      d->set(str("image"), str(p.value));
      break;
    case Part::Kind::kVideo: {
      d->set(str("type"), str("video"));
      if (p.frames.empty()) {
        d->set(str("video"), str(p.value));
      } else {
        std::vector<Value> frames;
        frames.reserve(p.frames.size());
        for (const std::string& f : p.frames) frames.push_back(str(f));
        d->set(str("video"), Value::list(std::move(frames)));
      }
      break;
    }
    case Part::Kind::kAudio:
      // qwen-omni-utils' part: {"type":"audio","audio":ref} (+ audio_start/audio_end).
      d->set(str("type"), str("audio"));
      d->set(str("audio"), str(p.value));
      if (p.audio.audio_start) d->set(str("audio_start"), Value::number(*p.audio.audio_start));
      if (p.audio.audio_end) d->set(str("audio_end"), Value::number(*p.audio.audio_end));
      break;
  }
  return d;
}

// A JSON text the record carried (checked when the record was parsed, so a failure here is a
// value beyond what the template engine holds, e.g. an integer over 64 bits).
Result<Value> json_value(std::string_view json, const std::string& what) {
  Result<Value> v = jinja::parse_json(json);
  if (!v.ok()) return invalid_argument(what + ": " + v.error().message());
  return v;
}

Result<Value> message_value(const Message& m, std::size_t index) {
  auto d = std::make_shared<jinja::DictObj>();
  d->set(str("role"), str(std::string(dataset::role_name(m.role))));
  bool all_text = true;
  for (const Part& p : m.parts) all_text = all_text && p.kind == Part::Kind::kText;
  if (m.content_is_string && all_text) {
    std::string s;
    for (const Part& p : m.parts) s += p.value;
    d->set(str("content"), str(std::move(s)));
  } else {
    std::vector<Value> parts;
    parts.reserve(m.parts.size());
    for (const Part& p : m.parts) parts.push_back(Value::dict(part_dict(p)));
    d->set(str("content"), Value::list(std::move(parts)));
  }
  if (!m.extra_json.empty()) {
    STOKER_ASSIGN_OR_RETURN(Value extra, json_value(m.extra_json, "message " + std::to_string(index)));
    if (extra.is_dict()) {
      for (const auto& [k, v] : extra.dict().items) {
        if (k.is_string() && (k.str() == "role" || k.str() == "content")) continue;
        d->set(k, v);
      }
    }
  }
  return Value::dict(std::move(d));
}

Result<jinja::Template> parse(std::string_view source, const std::string& origin) {
  Result<jinja::Template> t = jinja::parse_template(source);
  if (!t.ok()) return invalid_argument("chat template in " + origin + ": " + t.error().message());
  return t;
}

}  // namespace

Result<jinja::Variables> template_kwargs(std::string_view json, std::string_view what) {
  jinja::Variables out;
  if (json.empty()) return out;
  Result<Value> v = jinja::parse_json(json);
  if (!v.ok()) return invalid_argument(std::string(what) + ": " + v.error().message());
  if (!v->is_dict()) return invalid_argument(std::string(what) + " must be a JSON object");
  for (const auto& [k, x] : v->dict().items) {
    if (!k.is_string()) return invalid_argument(std::string(what) + ": keys must be strings");
    out.emplace_back(k.str(), x);
  }
  return out;
}

Result<std::unique_ptr<JinjaRenderer>> JinjaRenderer::create(std::string_view source,
                                                             std::string_view tool_use,
                                                             JinjaChatOptions options) {
  STOKER_ASSIGN_OR_RETURN(jinja::Template main, parse(source, options.origin));
  std::optional<jinja::Template> tools;
  if (!tool_use.empty()) {
    STOKER_ASSIGN_OR_RETURN(tools, parse(tool_use, options.origin + " (\"tool_use\")"));
  }
  if (options.turns.begin.empty() || options.turns.end.empty()) {
    return invalid_argument("chat template in " + options.origin + ": no turn markers given");
  }
  return std::unique_ptr<JinjaRenderer>(
      new JinjaRenderer(std::move(main), std::move(tools), std::move(options)));
}

Result<jinja::Variables> JinjaRenderer::variables(const Conversation& c) const {
  jinja::ChatInputs in;
  std::vector<Value> messages;
  messages.reserve(c.messages.size());
  for (std::size_t i = 0; i < c.messages.size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(Value m, message_value(c.messages[i], i));
    messages.push_back(std::move(m));
  }
  in.messages = Value::list(std::move(messages));
  if (!c.tools_json.empty()) {
    STOKER_ASSIGN_OR_RETURN(in.tools, json_value(c.tools_json, "\"tools\""));
    if (!in.tools.is_list()) return invalid_argument("\"tools\" must be a list of function schemas");
  }
  if (!c.documents_json.empty()) {
    STOKER_ASSIGN_OR_RETURN(in.documents, json_value(c.documents_json, "\"documents\""));
  }
  in.add_generation_prompt = false;
  in.special_tokens = options_.special_tokens;
  in.kwargs = options_.kwargs;
  STOKER_ASSIGN_OR_RETURN(jinja::Variables own,
                          template_kwargs(c.template_kwargs_json, "\"chat_template_kwargs\""));
  for (auto& kv : own) in.kwargs.push_back(std::move(kv));  // later ones win
  return jinja::chat_variables(in);
}

Result<ChatText> JinjaRenderer::render(const Conversation& c) const {
  auto named = [&](Error e) { return std::move(e.with_context(record_name(c.id))); };
  Result<jinja::Variables> vars = variables(c);
  if (!vars.ok()) return named(std::move(vars).error());
  const bool tools = tool_use_.has_value() && !c.tools_json.empty();
  const jinja::Template& tpl = tools ? *tool_use_ : main_;
  jinja::RenderOptions ro;
  ro.limits = options_.limits;
  Result<jinja::Rendered> r = tpl.render(*vars, ro);
  if (!r.ok()) {  // the engine's code: InvalidArgument, or ResourceExhausted for a limit
    return named(Error(r.error().code(), "chat template (" + options_.origin + "): " + r.error().message()));
  }
  ChatText out;
  out.text = std::move(r->text);
  if (tpl.info().has_generation) {
    out.supervised.reserve(r->generation.size());
    for (const jinja::Span& s : r->generation) out.supervised.push_back({s.begin, s.end});
  } else if (Status st = turn_spans(c, out.text, &out.supervised); !st.ok()) {
    return named(std::move(st).error());
  }
  return out;
}

Status JinjaRenderer::turn_spans(const Conversation& c, const std::string& text,
                                 std::vector<TextSpan>* spans) const {
  const TurnMarkers& t = options_.turns;
  std::size_t pos = 0, turns = 0;
  while ((pos = text.find(t.begin, pos)) != std::string::npos) {
    const std::size_t start = pos + t.begin.size();
    std::size_t stop = text.find(t.end, start);
    if (stop == std::string::npos) {
      stop = text.size();
    } else {
      stop += t.end.size();
      if (!t.after.empty() && text.compare(stop, t.after.size(), t.after) == 0) stop += t.after.size();
    }
    spans->push_back({start, stop});
    ++turns;
    pos = stop;
  }
  std::size_t assistants = 0;
  for (const Message& m : c.messages) assistants += m.role == dataset::Role::kAssistant;
  if (turns != assistants) {
    return invalid_argument(
        "the chat template rendered " + std::to_string(turns) + " assistant turn(s) (" +
        quoted(t.begin) + ") for the conversation's " +
        std::to_string(assistants) + " assistant message(s): the per-turn label rule cannot "
        "pair them (a record's text that spells a turn header, or a template that merges turns; "
        "a template with {% generation %} blocks labels by its own spans)");
  }
  return ok_status();
}

std::string JinjaRenderer::describe() const {
  auto rule = [&](const jinja::Template& t) {
    return t.info().has_generation
               ? std::string("{% generation %} spans (HF's return_assistant_tokens_mask rule)")
               : "each assistant turn (" + quoted(options_.turns.begin) + " to " +
                     quoted(options_.turns.end + options_.turns.after) + ")";
  };
  std::string out = options_.origin + ", rendered by the Jinja engine; labels: " + rule(main_);
  if (tool_use_) out += "; records with tools: its \"tool_use\" template, labels: " + rule(*tool_use_);
  return out;
}

}  // namespace stoker::text
