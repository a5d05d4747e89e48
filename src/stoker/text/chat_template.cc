// The two Qwen-VL templates, written out by hand from data/templates/*.jinja. Keep the two in
// step: tests/text/chat_template_parity.mjs renders the Jinja files and compares.
#include "stoker/text/chat_template.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Message;
using dataset::Part;
using dataset::Role;

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kVisionStart = "<|vision_start|>";
constexpr std::string_view kVisionEnd = "<|vision_end|>";
constexpr std::string_view kImagePad = "<|image_pad|>";
constexpr std::string_view kVideoPad = "<|video_pad|>";
constexpr std::string_view kEmptyThink = "<think>\n\n</think>\n\n";

class Builder {
 public:
  explicit Builder(RenderedChat* out) : out_(out) {}

  void text(std::string_view s, bool supervised, int msg) {
    if (s.empty()) return;
    auto& segs = out_->segments;
    if (!segs.empty() && segs.back().kind == Segment::Kind::kText &&
        segs.back().supervised == supervised && segs.back().message_index == msg) {
      segs.back().text.append(s);
      return;
    }
    segs.push_back({Segment::Kind::kText, std::string(s), supervised, -1, msg});
  }
  void special(std::string_view token, bool supervised, int msg) {
    out_->segments.push_back({Segment::Kind::kSpecial, std::string(token), supervised, -1, msg});
  }
  // `supervised`: the turn's (a vision id in an assistant turn is text of that turn; the
  // medium's block never is).
  void image(int msg, bool vision_id, bool supervised) {
    int index = out_->num_images++;
    if (vision_id) text("Picture " + std::to_string(index + 1) + ": ", supervised, msg);
    special(kVisionStart, false, msg);
    out_->segments.push_back({Segment::Kind::kImage, std::string(kImagePad), false, index, msg});
    special(kVisionEnd, false, msg);
  }
  void video(int msg, bool vision_id, bool supervised) {
    int index = out_->num_videos++;
    if (vision_id) text("Video " + std::to_string(index + 1) + ": ", supervised, msg);
    special(kVisionStart, false, msg);
    out_->segments.push_back({Segment::Kind::kVideo, std::string(kVideoPad), false, index, msg});
    special(kVisionEnd, false, msg);
  }

 private:
  RenderedChat* out_;
};

// Index of the assistant message whose answer is supervised when last_turn_only is set.
int last_assistant(const Conversation& c) {
  for (int i = static_cast<int>(c.messages.size()) - 1; i >= 0; --i) {
    if (c.messages[i].role == Role::kAssistant) return i;
  }
  return -1;
}

bool supervised_turn(const Conversation& c, int i, const ChatTemplateOptions& o, int last) {
  return c.messages[i].role == Role::kAssistant && (!o.last_turn_only || i == last);
}

// All parts: text verbatim, media as vision blocks (user turns; Qwen2-VL renders media in
// every role since its template treats all roles alike).
void all_parts(Builder& b, const Message& m, int msg, bool supervised,
               const ChatTemplateOptions& o) {
  for (const Part& p : m.parts) {
    switch (p.kind) {
      case Part::Kind::kText: b.text(p.value, supervised, msg); break;
      case Part::Kind::kImage: b.image(msg, o.add_vision_id, supervised); break;
      case Part::Kind::kVideo: b.video(msg, o.add_vision_id, supervised); break;
      case Part::Kind::kAudio: break;  // never reached: native_for refuses audio parts
    }
  }
}

std::string joined_text(const Message& m) {
  std::string s;
  for (const Part& p : m.parts) {
    if (p.kind == Part::Kind::kText) s += p.value;
  }
  return s;
}

bool has_media(const Message& m) {
  return std::any_of(m.parts.begin(), m.parts.end(),
                     [](const Part& p) { return p.kind != Part::Kind::kText; });
}

// Closes an assistant turn: "<|im_end|>" "\n", supervised with the answer (spec §4: all three
// trainers supervise answer + <|im_end|> + "\n").
void close_turn(Builder& b, int msg, bool supervised) {
  b.special(kImEnd, supervised, msg);
  b.text("\n", supervised, msg);
}

Status render_qwen2(const Conversation& c, const ChatTemplateOptions& o, Builder& b) {
  int last = last_assistant(c);
  for (int i = 0; i < static_cast<int>(c.messages.size()); ++i) {
    const Message& m = c.messages[i];
    if (i == 0 && m.role != Role::kSystem) {
      b.special(kImStart, false, -1);
      b.text("system\nYou are a helpful assistant.", false, -1);
      b.special(kImEnd, false, -1);
      b.text("\n", false, -1);
    }
    bool sup = supervised_turn(c, i, o, last);
    b.special(kImStart, false, i);
    b.text(std::string(dataset::role_name(m.role)) + "\n", false, i);
    all_parts(b, m, i, sup, o);
    close_turn(b, i, sup);
  }
  return ok_status();
}

Status render_qwen3(const Conversation& c, const ChatTemplateOptions& o, Builder& b) {
  int last = last_assistant(c);
  const int n = static_cast<int>(c.messages.size());
  if (n > 0 && c.messages[0].role == Role::kSystem) {
    if (has_media(c.messages[0])) {
      return invalid_argument("message 0 (system): the Qwen3-VL template drops media from "
                              "system turns");
    }
    b.special(kImStart, false, 0);
    b.text("system\n" + joined_text(c.messages[0]), false, 0);
    b.special(kImEnd, false, 0);
    b.text("\n", false, 0);
  }
  for (int i = 0; i < n; ++i) {
    const Message& m = c.messages[i];
    switch (m.role) {
      case Role::kSystem:
        if (i != 0) {
          return invalid_argument("message " + std::to_string(i) +
                                  " (system): the Qwen3-VL template only renders a leading "
                                  "system message");
        }
        break;
      case Role::kUser:
        b.special(kImStart, false, i);
        b.text("user\n", false, i);
        all_parts(b, m, i, false, o);
        b.special(kImEnd, false, i);
        b.text("\n", false, i);
        break;
      case Role::kAssistant: {
        if (has_media(m)) {
          return invalid_argument("message " + std::to_string(i) +
                                  " (assistant): the Qwen3-VL template drops media from "
                                  "assistant turns");
        }
        bool sup = supervised_turn(c, i, o, last);
        std::string answer = joined_text(m);
        b.special(kImStart, false, i);
        b.text("assistant\n", false, i);
        bool has_think = answer.find("<think>") != std::string::npos;
        if (o.think == ThinkMode::kEmptyThinkInPrompt && !has_think) b.text(kEmptyThink, false, i);
        if (o.think == ThinkMode::kEmptyThinkInAnswer && !has_think) b.text(kEmptyThink, sup, i);
        b.text(answer, sup, i);
        close_turn(b, i, sup);
        break;
      }
      case Role::kTool: {
        // Consecutive tool messages share one user turn (spec §3.2).
        bool first = i == 0 || c.messages[i - 1].role != Role::kTool;
        bool last_of_run = i + 1 == n || c.messages[i + 1].role != Role::kTool;
        if (first) {
          b.special(kImStart, false, i);
          b.text("user", false, i);
        }
        b.text("\n<tool_response>\n", false, i);
        all_parts(b, m, i, false, o);
        b.text("\n</tool_response>", false, i);
        if (last_of_run) {
          b.special(kImEnd, false, i);
          b.text("\n", false, i);
        }
        break;
      }
    }
  }
  return ok_status();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::string_view template_name(TemplateKind kind) {
  switch (kind) {
    case TemplateKind::kQwen2VL: return "qwen2_vl";
    case TemplateKind::kQwen3VLInstruct: return "qwen3_vl_instruct";
  }
  return "?";
}

Result<TemplateKind> template_for_model(std::string_view name) {
  std::string n = lower(name);
  // Normalise separators so "Qwen2.5-VL", "qwen2_5_vl" and "qwen2.5-vl" compare alike.
  for (char& ch : n) {
    if (ch == '-' || ch == '.' || ch == ' ') ch = '_';
  }
  if (n.find("thinking") != std::string::npos) {
    return invalid_argument("chat template for \"" + std::string(name) +
                            "\": Qwen3-VL Thinking templates are not supported (use an Instruct "
                            "checkpoint)");
  }
  if (n.find("qwen3_vl") != std::string::npos) return TemplateKind::kQwen3VLInstruct;
  if (n.find("qwen2_vl") != std::string::npos || n.find("qwen2_5_vl") != std::string::npos) {
    return TemplateKind::kQwen2VL;
  }
  return invalid_argument("no chat template for \"" + std::string(name) +
                          "\" (known: qwen2_vl, qwen2_5_vl, qwen3_vl)");
}

std::string RenderedChat::text() const {
  std::size_t n = 0;
  for (const Segment& s : segments) n += s.text.size();
  std::string out;
  out.reserve(n);
  for (const Segment& s : segments) out += s.text;
  return out;
}

Result<RenderedChat> render_chat(const dataset::Conversation& conversation, TemplateKind kind,
                                 const ChatTemplateOptions& options) {
  RenderedChat out;
  out.kind = kind;
  Builder b(&out);
  Status st = kind == TemplateKind::kQwen2VL ? render_qwen2(conversation, options, b)
                                             : render_qwen3(conversation, options, b);
  if (!st.ok()) {
    Error e = std::move(st).error();
    std::string rec = conversation.id.empty() ? "record" : "record \"" + conversation.id + "\"";
    return std::move(e.with_context(rec));
  }
  if (options.add_generation_prompt) {
    b.special(kImStart, false, -1);
    b.text("assistant\n", false, -1);
  }
  return out;
}

}  // namespace stoker::text
