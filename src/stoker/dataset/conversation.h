// The conversation model every dataset format is converted into on read, and the record parser.
// Accepted record forms (one JSON object per JSONL line):
//  - OpenAI messages: {"messages":[{"role":"user","content":"text" | [{"type":"text","text":..},
//    {"type":"image","image":"path"} | {"type":"image_url","image_url":{"url":..}} |
//    {"type":"video","video":"path" | ["frame0.jpg", ...], "fps":2, "nframes":8,
//     "video_start":1.5, "video_end":9, "min_pixels":.., "max_pixels":.., "total_pixels":..}]}, ...]}
//  - ShareGPT: {"conversations":[{"from":"human"|"gpt"|"system","value":"..<image>.."}],
//    "images":[...], "videos":["a.mp4" | ["f0.jpg", ...] | {"video":"a.mp4","fps":1,...}, ...]}
//  - LLaVA: {"id":..,"image":"a.jpg" | [..],"conversations":[{"from":"human","value":"<image>\n.."}]}
// `<image>` / `<video>` tags become media parts in order; count mismatches are errors.
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
  bool any() const;
};

struct Part {
  enum class Kind { kText, kImage, kVideo };
  Kind kind = Kind::kText;
  std::string value;  // the text, or the media reference as written in the record
  // kVideo given as a list of frame images (value empty): their references, in order.
  std::vector<std::string> frames;
  VideoParams video;
};

struct Message {
  Role role = Role::kUser;
  std::vector<Part> parts;
  // True when the record gave `content` as a plain string (templates render both the same for
  // text; kept for fidelity).
  bool content_is_string = false;
};

struct Conversation {
  std::string id;  // the record's "id" if present, else empty (callers name it by file:line)
  std::vector<Message> messages;

  int count(Part::Kind kind) const;
};

enum class RecordFormat { kAuto, kOpenAI, kShareGPT, kLlava };

Result<Conversation> parse_record(std::string_view json, RecordFormat format = RecordFormat::kAuto);

// SFT sanity: at least one assistant turn; system only first; user/tool and assistant alternate
// (a tool message follows an assistant turn); no empty conversation. Errors name the message index.
Status validate_for_sft(const Conversation& conversation);

}  // namespace stoker::dataset
