// The conversation model every dataset format is converted into on read, and the record parser.
// Accepted record forms (one JSON object per JSONL line):
//  - OpenAI messages: {"messages":[{"role":"user","content":"text" | [{"type":"text","text":..},
//    {"type":"image","image":"path"} | {"type":"image_url","image_url":{"url":..}} |
//    {"type":"video","video":"path" | ["frame0.jpg", ...], "fps":2, "nframes":8,
//     "video_start":1.5, "video_end":9, "min_pixels":.., "max_pixels":.., "total_pixels":..}]}, ...]}
//  - ShareGPT: {"conversations":[{"from":"human"|"gpt"|"system","value":"..<image>.."}],
//    "images":[...], "videos":["a.mp4" | ["f0.jpg", ...] | {"video":"a.mp4","fps":1,...}, ...],
//    "audios":["a.wav" | {"audio":"a.wav","audio_start":1,"audio_end":3}, ...]}
//  - audio (Qwen2-Audio / Qwen-Omni): an OpenAI part {"type":"audio","audio":"a.wav",
//    "audio_start":1.0,"audio_end":4.5} ("audio_url"/"input_audio" spellings too), `<audio>` tags
//    with an "audios" list; a video part or `videos` entry with "use_audio_in_video": true (or
//    the record's top-level "use_audio_in_video": true for all its videos) marks the video's own
//    audio track as an input (qwen-omni-utils' use_audio_in_video).
//  - LLaVA: {"id":..,"image":"a.jpg" | [..],"conversations":[{"from":"human","value":"<image>\n.."}]}
// Beside the messages, for the chat template: "tools", "documents", "chat_template_kwargs", and an
// OpenAI message's keys other than role/content (tool_calls, tool_call_id, name, ...), kept as JSON.
// `<image>` / `<video>` / `<audio>` tags become media parts in order; count mismatches are errors.
// Media references are kept as written (resolution against the manifest's URI happens later).
// Pure functions, thread-safe. Errors: InvalidArgument / DataLoss naming the record and reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

enum class Role { kSystem, kUser, kAssistant, kTool };
std::string_view role_name(Role r);  // "system", "user", "assistant", "tool"

// The per-video keys qwen-vl-utils reads (video/sampling.h VideoOptions): unset = its default.
struct VideoParams {
  std::optional<double> fps, nframes, min_frames, max_frames, video_start, video_end, min_pixels,
      max_pixels, total_pixels, sample_fps, raw_fps;
  // qwen-omni-utils' use_audio_in_video for this video (the part's key, else the record's).
  // Not one of the sampling keys: any() ignores it.
  bool use_audio_in_video = false;
  bool any() const;
};

// The per-clip keys of an audio part (qwen-omni-utils: librosa's offset and duration).
struct AudioParams {
  std::optional<double> audio_start, audio_end;
};

struct Part {
  enum class Kind { kText, kImage, kVideo, kAudio };
  Kind kind = Kind::kText;
  std::string value;  // the text, or the media reference as written in the record
  // kVideo given as a list of frame images (value empty): their references, in order.
  std::vector<std::string> frames;
  VideoParams video;
  AudioParams audio;
};

struct Message {
  Role role = Role::kUser;
  std::vector<Part> parts;
  // True when the record gave `content` as a plain string (templates render both the same for
  // text; kept for fidelity). A null or absent content is an empty string.
  bool content_is_string = false;
  // OpenAI records: the message's other keys (`tool_calls`, `name`, `tool_call_id`,
  // `reasoning_content`, ...) as one JSON object text, in record order, for the chat template;
  // empty when it has none.
  std::string extra_json;
};

struct Conversation {
  std::string id;  // the record's "id" if present, else empty (callers name it by file:line)
  std::vector<Message> messages;
  // What the chat template gets beside the messages (JSON texts; empty: none): the top-level
  // "tools" (a list of function schemas; LLaMA-Factory's JSON string of one is read as that
  // list), "documents" (a list), and "chat_template_kwargs" (an object: template variables such
  // as enable_thinking for this record).
  std::string tools_json, documents_json, template_kwargs_json;

  // Whether only the messages' roles and parts matter to a template: no tools, documents,
  // template kwargs or extra message keys.
  bool plain() const;

  int count(Part::Kind kind) const;
};

enum class RecordFormat { kAuto, kOpenAI, kShareGPT, kLlava };

Result<Conversation> parse_record(std::string_view json, RecordFormat format = RecordFormat::kAuto);

// SFT sanity: at least one assistant turn; system only first; user/tool and assistant alternate
// (a tool message follows an assistant turn); no empty conversation. Errors name the message index.
// Media may sit in any turn: the chat template decides where they go (one that drops a medium
// fails its sample when its placeholders are counted, text/labels.h).
Status validate_for_sft(const Conversation& conversation);

}  // namespace stoker::dataset
