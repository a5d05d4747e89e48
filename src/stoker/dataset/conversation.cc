// Record parsing: one JSON object → Conversation. simdjson DOM with a per-thread parser (the
// parser's buffers are reused, so steady-state parsing does not allocate beyond the output).
#include "stoker/dataset/conversation.h"

#include <simdjson.h>

#include "stoker/base/json_text.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace stoker::dataset {
namespace {

namespace dom = simdjson::dom;

}  // namespace

bool VideoParams::any() const {
  return fps || nframes || min_frames || max_frames || video_start || video_end || min_pixels ||
         max_pixels || total_pixels || sample_fps || raw_fps;
}

namespace {


// Names the record in error messages: `record "id"` when it has an id.
std::string record_name(const std::string& id) {
  return id.empty() ? std::string("record") : "record \"" + id + "\"";
}

Error bad(const std::string& id, std::string why) {
  return invalid_argument(record_name(id) + ": " + std::move(why));
}

// A media list: an array of strings, one string, or absent. Entries that are objects with a
// "path" / "url" / "image" / "video" string are accepted too (some exporters write them).
Status read_media_list(dom::object elem, const char* key, const std::string& id,
                       std::vector<std::string>* out) {
  auto add = [&](dom::element e) -> Status {
    std::string_view s;
    if (e.get_string().get(s) == simdjson::SUCCESS) {
      out->emplace_back(s);
      return ok_status();
    }
    if (e.is_object()) {
      for (const char* k : {"path", "url", "image", "video"}) {
        if (e[k].get_string().get(s) == simdjson::SUCCESS) {
          out->emplace_back(s);
          return ok_status();
        }
      }
    }
    return bad(id, std::string("\"") + key + "\" entries must be strings");
  };
  dom::element v;
  if (elem[key].get(v) != simdjson::SUCCESS || v.is_null()) return ok_status();
  if (v.is_array()) {
    dom::array arr = v.get_array().value_unsafe();
    for (dom::element e : arr) STOKER_RETURN_IF_ERROR(add(e));
    return ok_status();
  }
  return add(v);
}

// The numeric video keys of an object (a {"type":"video"} part or a `videos` list entry).
Status read_video_params(dom::object o, const std::string& id, VideoParams* v) {
  struct Key {
    const char* name;
    std::optional<double> VideoParams::*field;
  };
  static const Key keys[] = {
      {"fps", &VideoParams::fps},           {"nframes", &VideoParams::nframes},
      {"min_frames", &VideoParams::min_frames}, {"max_frames", &VideoParams::max_frames},
      {"video_start", &VideoParams::video_start}, {"video_end", &VideoParams::video_end},
      {"min_pixels", &VideoParams::min_pixels}, {"max_pixels", &VideoParams::max_pixels},
      {"total_pixels", &VideoParams::total_pixels}, {"sample_fps", &VideoParams::sample_fps},
      {"raw_fps", &VideoParams::raw_fps}};
  for (const Key& k : keys) {
    dom::element e;
    if (o[k.name].get(e) != simdjson::SUCCESS || e.is_null()) continue;
    double d;
    if (e.get_double().get(d) != simdjson::SUCCESS) {
      std::int64_t i;
      std::uint64_t u;
      if (e.get_int64().get(i) == simdjson::SUCCESS) d = static_cast<double>(i);
      else if (e.get_uint64().get(u) == simdjson::SUCCESS) d = static_cast<double>(u);
      else return bad(id, std::string("video \"") + k.name + "\" must be a number");
    }
    v->*k.field = d;
  }
  dom::element e;
  if (o["use_audio_in_video"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    bool b = false;
    if (e.get_bool().get(b) != simdjson::SUCCESS) {
      return bad(id, "video \"use_audio_in_video\" must be true or false");
    }
    v->use_audio_in_video = b;
  }
  return ok_status();
}

// The audio keys of an object (a {"type":"audio"} part or an `audios` list entry): finite
// numbers of seconds, audio_start ≥ 0, audio_end > audio_start.
Status read_audio_params(dom::object o, const std::string& id, AudioParams* a) {
  for (auto [name, field] : {std::pair{"audio_start", &AudioParams::audio_start},
                             std::pair{"audio_end", &AudioParams::audio_end}}) {
    dom::element e;
    if (o[name].get(e) != simdjson::SUCCESS || e.is_null()) continue;
    double d;
    std::int64_t i;
    if (e.get_double().get(d) == simdjson::SUCCESS) {
    } else if (e.get_int64().get(i) == simdjson::SUCCESS) {
      d = static_cast<double>(i);
    } else {
      return bad(id, std::string("audio \"") + name + "\" must be a number");
    }
    if (!std::isfinite(d) || d < 0 || d > 1e7) {
      return bad(id, std::string("audio \"") + name + "\" must be a number of seconds ≥ 0");
    }
    a->*field = d;
  }
  if (a->audio_start && a->audio_end && *a->audio_end <= *a->audio_start) {
    return bad(id, "audio \"audio_end\" must be after \"audio_start\"");
  }
  return ok_status();
}

// One `audios` list entry: "a.wav" or {"audio"|"path"|"url": "a.wav", "audio_start": .., ..}.
Status read_audio_entry(dom::element e, const std::string& id, Part* out) {
  out->kind = Part::Kind::kAudio;
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    out->value = std::string(s);
    return ok_status();
  }
  if (e.is_object()) {
    dom::object o = e.get_object().value_unsafe();
    for (const char* k : {"audio", "path", "url"}) {
      if (o[k].get_string().get(s) != simdjson::SUCCESS) continue;
      out->value = std::string(s);
      return read_audio_params(o, id, &out->audio);
    }
  }
  return bad(id, "\"audios\" entries must be strings or objects with an \"audio\"");
}

// A media list field (`key`): absent or null is none; a list reads each entry with `entry`; any
// other value is one entry ("videos": "a.mp4").
using EntryReader = Status (*)(dom::element, const std::string&, Part*);
Status read_entry_list(dom::object elem, const char* key, const std::string& id,
                       EntryReader entry, std::vector<Part>* out) {
  dom::element v;
  if (elem[key].get(v) != simdjson::SUCCESS || v.is_null()) return ok_status();
  if (v.is_array()) {
    dom::array arr = v.get_array().value_unsafe();
    for (dom::element e : arr) {
      Part p;
      STOKER_RETURN_IF_ERROR(entry(e, id, &p));
      out->push_back(std::move(p));
    }
    return ok_status();
  }
  Part p;
  STOKER_RETURN_IF_ERROR(entry(v, id, &p));
  out->push_back(std::move(p));
  return ok_status();
}

// A video given as a list of frame references.
Status read_frame_list(dom::array arr, const std::string& id, std::vector<std::string>* frames) {
  for (dom::element f : arr) {
    std::string_view s;
    if (f.get_string().get(s) != simdjson::SUCCESS) {
      return bad(id, "video frame lists must hold strings");
    }
    frames->emplace_back(s);
  }
  if (frames->empty()) return bad(id, "empty video frame list");
  return ok_status();
}

// One `videos` list entry: "a.mp4", ["f0.jpg", ...], or {"video"|"path"|"url": .., options}.
Status read_video_entry(dom::element e, const std::string& id, Part* out) {
  out->kind = Part::Kind::kVideo;
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    out->value = std::string(s);
    return ok_status();
  }
  if (e.is_array()) return read_frame_list(e.get_array().value_unsafe(), id, &out->frames);
  if (e.is_object()) {
    dom::object o = e.get_object().value_unsafe();
    for (const char* k : {"video", "path", "url"}) {
      dom::element v;
      if (o[k].get(v) != simdjson::SUCCESS) continue;
      if (v.get_string().get(s) == simdjson::SUCCESS) {
        out->value = std::string(s);
      } else if (v.is_array()) {
        STOKER_RETURN_IF_ERROR(read_frame_list(v.get_array().value_unsafe(), id, &out->frames));
      } else {
        continue;
      }
      return read_video_params(o, id, &out->video);
    }
  }
  return bad(id, "\"videos\" entries must be strings, frame lists or objects with a \"video\"");
}

struct MediaLists {
  std::vector<std::string> images;
  std::vector<Part> videos;
  std::vector<Part> audios;
  std::size_t next_image = 0, next_video = 0, next_audio = 0;
  int audio_tags = 0;
  bool any() const { return !images.empty() || !videos.empty() || !audios.empty(); }
};

// Splits `text` at <image> / <video> tags into parts, consuming the media lists in order.
// Text between tags is kept verbatim (LLaVA's "<image>\n" keeps its "\n"); empty text pieces
// are dropped. Running out of media is an error naming the counts.
// Linear: each tag kind's next occurrence is searched for only once it has been consumed (a
// text of 100k <image> tags and no <video> used to rescan to its end for "<video>" after every
// tag: 27 s of CPU for one 0.7 MB record).
Status split_tags(std::string_view text, MediaLists* media, int* image_tags, int* video_tags,
                  std::vector<Part>* parts) {
  std::size_t pos = 0;
  std::size_t img = text.find("<image>");
  std::size_t vid = text.find("<video>");
  // <audio> is looked for only when the record lists audios (a text-only or image record
  // keeps "<audio>" as text, as before audio parts existed).
  std::size_t aud = media->audios.empty() ? text.npos : text.find("<audio>");
  while (pos <= text.size()) {
    if (img != std::string_view::npos && img < pos) img = text.find("<image>", pos);
    if (vid != std::string_view::npos && vid < pos) vid = text.find("<video>", pos);
    if (aud != std::string_view::npos && aud < pos) aud = text.find("<audio>", pos);
    std::size_t at = std::min({img, vid, aud});
    std::string_view piece = text.substr(pos, at == std::string_view::npos ? text.npos : at - pos);
    if (!piece.empty()) parts->push_back({Part::Kind::kText, std::string(piece)});
    if (at == std::string_view::npos) break;
    if (at == img) {
      ++*image_tags;
      std::string ref = media->next_image < media->images.size()
                            ? media->images[media->next_image] : std::string();
      ++media->next_image;
      parts->push_back({Part::Kind::kImage, std::move(ref)});
    } else if (at == aud) {
      ++media->audio_tags;
      Part audio;
      audio.kind = Part::Kind::kAudio;
      if (media->next_audio < media->audios.size()) audio = media->audios[media->next_audio];
      ++media->next_audio;
      parts->push_back(std::move(audio));
    } else {
      ++*video_tags;
      Part video;
      video.kind = Part::Kind::kVideo;
      if (media->next_video < media->videos.size()) video = media->videos[media->next_video];
      ++media->next_video;
      parts->push_back(std::move(video));
    }
    pos = at + 7;  // all three tags are 7 bytes
  }
  return ok_status();
}

Status check_counts(const std::string& id, const MediaLists& media, int image_tags,
                    int video_tags) {
  if (static_cast<std::size_t>(image_tags) != media.images.size()) {
    return bad(id, std::to_string(image_tags) + " <image> tag(s) in the text but " +
                       std::to_string(media.images.size()) + " image(s) in the record");
  }
  if (static_cast<std::size_t>(video_tags) != media.videos.size()) {
    return bad(id, std::to_string(video_tags) + " <video> tag(s) in the text but " +
                       std::to_string(media.videos.size()) + " video(s) in the record");
  }
  if (static_cast<std::size_t>(media.audio_tags) != media.audios.size()) {
    return bad(id, std::to_string(media.audio_tags) + " <audio> tag(s) in the text but " +
                       std::to_string(media.audios.size()) + " audio(s) in the record");
  }
  return ok_status();
}

Result<Role> parse_role(std::string_view r, const std::string& id, std::size_t index) {
  if (r == "system") return Role::kSystem;
  if (r == "user" || r == "human") return Role::kUser;
  if (r == "assistant" || r == "gpt" || r == "function_call") return Role::kAssistant;
  if (r == "tool" || r == "observation" || r == "function" || r == "ipython") return Role::kTool;
  return bad(id, "message " + std::to_string(index) + ": unknown role \"" + std::string(r) + "\"");
}

std::string read_id(dom::object obj) {
  dom::element v;
  if (obj["id"].get(v) != simdjson::SUCCESS) return {};
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return std::to_string(i);
  uint64_t u;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) return std::to_string(u);
  return {};
}

// One OpenAI content part. Accepts the OpenAI and HF processor spellings.
Status parse_openai_part(dom::element e, const std::string& id, std::size_t msg,
                         MediaLists* media, int* image_tags, int* video_tags,
                         std::vector<Part>* parts) {
  std::string where = "message " + std::to_string(msg) + ": ";
  dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    std::string_view s;
    if (e.get_string().get(s) == simdjson::SUCCESS) {  // a bare string part
      if (media->any()) return split_tags(s, media, image_tags, video_tags, parts);
      parts->push_back({Part::Kind::kText, std::string(s)});
      return ok_status();
    }
    return bad(id, where + "content parts must be objects");
  }
  std::string_view type;
  if (o["type"].get_string().get(type) != simdjson::SUCCESS) {
    return bad(id, where + "content part without a string \"type\"");
  }
  std::string_view s;
  if (type == "text") {
    if (o["text"].get_string().get(s) != simdjson::SUCCESS) {
      return bad(id, where + "text part without a string \"text\"");
    }
    if (media->any()) return split_tags(s, media, image_tags, video_tags, parts);
    parts->push_back({Part::Kind::kText, std::string(s)});
    return ok_status();
  }
  bool is_image = type == "image" || type == "image_url";
  bool is_video = type == "video" || type == "video_url";
  if (type == "audio" || type == "audio_url") {
    // {"type":"audio","audio":"a.wav"} | "url"/"path" | {"type":"audio_url","audio_url":{"url":..}}
    for (const char* k : {"audio", "url", "path", "audio_url"}) {
      dom::element v;
      if (o[k].get(v) != simdjson::SUCCESS) continue;
      if (!(v.get_string().get(s) == simdjson::SUCCESS ||
            (v.is_object() && v["url"].get_string().get(s) == simdjson::SUCCESS))) {
        continue;
      }
      Part part;
      part.kind = Part::Kind::kAudio;
      part.value = std::string(s);
      STOKER_RETURN_IF_ERROR(read_audio_params(o, id, &part.audio));
      parts->push_back(std::move(part));
      return ok_status();
    }
    return bad(id, where + std::string(type) + " part without a reference");
  }
  if (!is_image && !is_video) {
    return bad(id, where + "unsupported content part type \"" + std::string(type) + "\"");
  }
  // {"type":"image","image":"p"} | {"type":"image","url"|"path":"p"} |
  // {"type":"image_url","image_url":{"url":"p"}} | {"type":"image_url","image_url":"p"}
  const char* keys[] = {is_image ? "image" : "video", "url", "path",
                        is_image ? "image_url" : "video_url"};
  for (const char* k : keys) {
    dom::element v;
    if (o[k].get(v) != simdjson::SUCCESS) continue;
    Part part;
    part.kind = is_image ? Part::Kind::kImage : Part::Kind::kVideo;
    if (v.get_string().get(s) == simdjson::SUCCESS ||
        (v.is_object() && v["url"].get_string().get(s) == simdjson::SUCCESS)) {
      part.value = std::string(s);
    } else if (is_video && v.is_array()) {
      STOKER_RETURN_IF_ERROR(read_frame_list(v.get_array().value_unsafe(), id, &part.frames));
    } else {
      continue;
    }
    if (is_video) STOKER_RETURN_IF_ERROR(read_video_params(o, id, &part.video));
    parts->push_back(std::move(part));
    return ok_status();
  }
  return bad(id, where + std::string(type) + " part without a reference");
}

// The template inputs beside the messages: "tools" (a list, or a JSON string holding one, as
// LLaMA-Factory writes it), "documents" (a list), "chat_template_kwargs" (an object).
Status read_template_inputs(dom::object root, Conversation* conv) {
  dom::element v;
  if (root["tools"].get(v) == simdjson::SUCCESS && !v.is_null()) {
    std::string_view s;
    if (v.is_array()) {
      conv->tools_json = simdjson::to_string(v);
    } else if (v.get_string().get(s) == simdjson::SUCCESS) {
      if (!s.empty()) conv->tools_json = std::string(s);  // parsed (and checked) by the template
    } else {
      return bad(conv->id, "\"tools\" must be a list of function schemas (or a JSON string of one)");
    }
  }
  if (root["documents"].get(v) == simdjson::SUCCESS && !v.is_null()) {
    if (!v.is_array()) return bad(conv->id, "\"documents\" must be a list");
    conv->documents_json = simdjson::to_string(v);
  }
  if (root["chat_template_kwargs"].get(v) == simdjson::SUCCESS && !v.is_null()) {
    if (!v.is_object()) return bad(conv->id, "\"chat_template_kwargs\" must be an object");
    conv->template_kwargs_json = simdjson::to_string(v);
  }
  return ok_status();
}

// An OpenAI message's keys other than role and content, as one JSON object text.
std::string extra_keys(dom::object m) {
  std::string out;
  for (dom::key_value_pair kv : m) {
    if (kv.key == "role" || kv.key == "content") continue;
    out += out.empty() ? "{" : ",";
    append_json_string(out, kv.key);
    out += ':';
    out += simdjson::to_string(kv.value);
  }
  if (!out.empty()) out += '}';
  return out;
}

// The record's top-level "use_audio_in_video": true marks every video part (LLaMA-Factory's
// data argument, qwen-omni-utils' process_mm_info flag).
Status apply_audio_in_video(dom::object root, Conversation* conv) {
  dom::element e;
  if (root["use_audio_in_video"].get(e) != simdjson::SUCCESS || e.is_null()) return ok_status();
  bool b = false;
  if (e.get_bool().get(b) != simdjson::SUCCESS) {
    return bad(conv->id, "\"use_audio_in_video\" must be true or false");
  }
  if (!b) return ok_status();
  for (Message& m : conv->messages) {
    for (Part& p : m.parts) {
      if (p.kind == Part::Kind::kVideo) p.video.use_audio_in_video = true;
    }
  }
  return ok_status();
}

Result<Conversation> parse_openai(dom::object root, std::string id) {
  Conversation conv;
  conv.id = std::move(id);
  STOKER_RETURN_IF_ERROR(read_template_inputs(root, &conv));
  MediaLists media;  // LLaMA-Factory's "openai" layout: string content with <image> tags + lists
  STOKER_RETURN_IF_ERROR(read_media_list(root, "images", conv.id, &media.images));
  STOKER_RETURN_IF_ERROR(read_entry_list(root, "videos", conv.id, read_video_entry, &media.videos));
  STOKER_RETURN_IF_ERROR(read_entry_list(root, "audios", conv.id, read_audio_entry, &media.audios));
  int image_tags = 0, video_tags = 0;
  dom::array msgs;
  if (root["messages"].get_array().get(msgs) != simdjson::SUCCESS) {
    return bad(conv.id, "\"messages\" must be an array");
  }
  std::size_t i = 0;
  for (dom::element m : msgs) {
    std::string where = "message " + std::to_string(i) + ": ";
    std::string_view role;
    if (m["role"].get_string().get(role) != simdjson::SUCCESS) {
      return bad(conv.id, where + "missing string \"role\"");
    }
    STOKER_ASSIGN_OR_RETURN(Role r, parse_role(role, conv.id, i));
    Message msg;
    msg.role = r;
    msg.extra_json = extra_keys(m.get_object().value_unsafe());
    dom::element content;
    if (m["content"].get(content) != simdjson::SUCCESS || content.is_null()) {
      msg.content_is_string = true;  // e.g. an assistant turn carrying only tool_calls
    } else if (content.is_string()) {
      msg.content_is_string = true;
      std::string_view s = content.get_string().value_unsafe();
      if (media.any()) {
        STOKER_RETURN_IF_ERROR(split_tags(s, &media, &image_tags, &video_tags, &msg.parts));
      } else {
        msg.parts.push_back({Part::Kind::kText, std::string(s)});
      }
    } else if (content.is_array()) {
      dom::array arr = content.get_array().value_unsafe();
      for (dom::element p : arr) {
        STOKER_RETURN_IF_ERROR(
            parse_openai_part(p, conv.id, i, &media, &image_tags, &video_tags, &msg.parts));
      }
    } else {
      return bad(conv.id, where + "\"content\" must be a string, an array or null");
    }
    conv.messages.push_back(std::move(msg));
    ++i;
  }
  if (media.any()) STOKER_RETURN_IF_ERROR(check_counts(conv.id, media, image_tags, video_tags));
  STOKER_RETURN_IF_ERROR(apply_audio_in_video(root, &conv));
  return conv;
}

// ShareGPT and LLaVA differ only in where the media list lives ("images" vs "image").
Result<Conversation> parse_sharegpt(dom::object root, std::string id) {
  Conversation conv;
  conv.id = std::move(id);
  STOKER_RETURN_IF_ERROR(read_template_inputs(root, &conv));
  MediaLists media;
  STOKER_RETURN_IF_ERROR(read_media_list(root, "images", conv.id, &media.images));
  if (media.images.empty()) {
    STOKER_RETURN_IF_ERROR(read_media_list(root, "image", conv.id, &media.images));
  }
  STOKER_RETURN_IF_ERROR(read_entry_list(root, "videos", conv.id, read_video_entry, &media.videos));
  if (media.videos.empty()) {
    STOKER_RETURN_IF_ERROR(
        read_entry_list(root, "video", conv.id, read_video_entry, &media.videos));
  }
  STOKER_RETURN_IF_ERROR(read_entry_list(root, "audios", conv.id, read_audio_entry, &media.audios));
  // LLaMA-Factory's ShareGPT puts the system prompt in a top-level "system" string.
  std::string_view system;
  if (root["system"].get_string().get(system) == simdjson::SUCCESS && !system.empty()) {
    Message msg;
    msg.role = Role::kSystem;
    msg.content_is_string = true;
    msg.parts.push_back({Part::Kind::kText, std::string(system)});
    conv.messages.push_back(std::move(msg));
  }
  dom::array turns;
  if (root["conversations"].get_array().get(turns) != simdjson::SUCCESS) {
    return bad(conv.id, "\"conversations\" must be an array");
  }
  int image_tags = 0, video_tags = 0;
  std::size_t i = 0;
  for (dom::element t : turns) {
    std::string where = "message " + std::to_string(i) + ": ";
    std::string_view from, value;
    if (t["from"].get_string().get(from) != simdjson::SUCCESS &&
        t["role"].get_string().get(from) != simdjson::SUCCESS) {
      return bad(conv.id, where + "missing string \"from\"");
    }
    if (t["value"].get_string().get(value) != simdjson::SUCCESS &&
        t["content"].get_string().get(value) != simdjson::SUCCESS) {
      return bad(conv.id, where + "missing string \"value\"");
    }
    STOKER_ASSIGN_OR_RETURN(Role r, parse_role(from, conv.id, i));
    Message msg;
    msg.role = r;
    msg.content_is_string = true;
    STOKER_RETURN_IF_ERROR(split_tags(value, &media, &image_tags, &video_tags, &msg.parts));
    conv.messages.push_back(std::move(msg));
    ++i;
  }
  STOKER_RETURN_IF_ERROR(check_counts(conv.id, media, image_tags, video_tags));
  STOKER_RETURN_IF_ERROR(apply_audio_in_video(root, &conv));
  return conv;
}

}  // namespace

std::string_view role_name(Role r) {
  switch (r) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "?";
}

bool Conversation::plain() const {
  if (!tools_json.empty() || !documents_json.empty() || !template_kwargs_json.empty()) return false;
  for (const Message& m : messages) {
    if (!m.extra_json.empty()) return false;
  }
  return true;
}

int Conversation::count(Part::Kind kind) const {
  int n = 0;
  for (const Message& m : messages) {
    for (const Part& p : m.parts) n += p.kind == kind;
  }
  return n;
}

Result<Conversation> parse_record(std::string_view json, RecordFormat format) {
  thread_local dom::parser parser;
  dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err != simdjson::SUCCESS) {
    return invalid_argument(std::string("record is not valid JSON: ") +
                            simdjson::error_message(err));
  }
  dom::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) {
    return invalid_argument("record is not a JSON object");
  }
  std::string id = read_id(root);
  if (format == RecordFormat::kAuto) {
    if (root["messages"].error() == simdjson::SUCCESS) {
      format = RecordFormat::kOpenAI;
    } else if (root["conversations"].error() == simdjson::SUCCESS) {
      format = root["images"].error() == simdjson::SUCCESS ||
                       root["image"].error() != simdjson::SUCCESS
                   ? RecordFormat::kShareGPT : RecordFormat::kLlava;
    } else {
      return bad(id, "neither \"messages\" (OpenAI) nor \"conversations\" (ShareGPT/LLaVA)");
    }
  }
  switch (format) {
    case RecordFormat::kOpenAI: return parse_openai(root, std::move(id));
    case RecordFormat::kShareGPT:
    case RecordFormat::kLlava: return parse_sharegpt(root, std::move(id));
    case RecordFormat::kAuto: break;
  }
  return internal_error("unreachable record format");
}

Status validate_for_sft(const Conversation& c) {
  auto fail = [&](std::size_t i, std::string why) {
    return invalid_argument(record_name(c.id) + ": message " + std::to_string(i) + " (" +
                            std::string(role_name(c.messages[i].role)) + "): " + why);
  };
  if (c.messages.empty()) return invalid_argument(record_name(c.id) + ": no messages");
  bool any_assistant = false;
  for (std::size_t i = 0; i < c.messages.size(); ++i) {
    Role r = c.messages[i].role;
    if (r == Role::kSystem) {
      if (i != 0) return fail(i, "a system message may only come first");
      continue;
    }
    Role prev = i == 0 ? Role::kSystem : c.messages[i - 1].role;
    switch (r) {
      case Role::kUser:
        if (prev == Role::kUser) return fail(i, "two user turns in a row");
        break;
      case Role::kAssistant:
        if (prev == Role::kSystem) return fail(i, "the conversation must start with a user turn");
        if (prev == Role::kAssistant) return fail(i, "two assistant turns in a row");
        any_assistant = true;
        break;
      case Role::kTool:
        if (prev != Role::kAssistant && prev != Role::kTool) {
          return fail(i, "a tool message must follow an assistant turn");
        }
        break;
      case Role::kSystem: break;
    }
  }
  if (!any_assistant) return invalid_argument(record_name(c.id) + ": no assistant turn");
  return ok_status();
}

}  // namespace stoker::dataset
