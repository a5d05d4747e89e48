#include "stoker/dataset/chatml.h"

#include <simdjson.h>

#include "stoker/base/json_text.h"

namespace stoker::dataset {
namespace {

namespace dom = simdjson::dom;

std::string dirname_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}

std::string last_extension(const std::string& part) {
  std::string ext = part.substr(part.rfind('.') == std::string::npos ? 0 : part.rfind('.') + 1);
  for (char& c : ext)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return ext;
}

bool one_of(const std::string& s, std::initializer_list<const char*> set) {
  for (const char* x : set)
    if (s == x) return true;
  return false;
}

Result<std::vector<std::uint8_t>> part_bytes(const WdsShard& shard, const WdsSample& sample, const WdsPart& part) {
  return shard.read_part(sample, part);
}

// One medium: a single range (an image, a video file) or a list of frames.
struct Medium {
  std::vector<ByteRange> frames;
  bool frame_list = false;
};

class ChatmlBuilder {
 public:
  ChatmlBuilder(const WdsShard& shard, const WdsSample& sample, const EnergonSampleConfig& config,
                const PickleLimits& limits)
      : shard_(shard), sample_(sample), config_(config), limits_(limits), where_(sample_location(shard, sample)) {}

  Result<SourceRecord> build() {
    STOKER_RETURN_IF_ERROR(load("imgs", false, &images_));
    STOKER_RETURN_IF_ERROR(load("videos", true, &videos_));
    const std::string& conv_part = *config_.field("conversation");
    const WdsPart* part = sample_.find(conv_part);
    if (!part) return invalid_argument(where_ + ": no part '" + conv_part + "' (field_map.conversation)");
    STOKER_ASSIGN_OR_RETURN(auto bytes, part_bytes(shard_, sample_, *part));
    dom::parser parser;
    dom::element root;
    const simdjson::padded_string padded(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (auto err = parser.parse(padded).get(root); err)
      return invalid_argument(where_ + ": part '" + conv_part + "' is not valid JSON: " + simdjson::error_message(err));
    dom::array turns;
    std::string tools;
    if (root.is_object()) {
      dom::element list;
      bool found = false;
      for (const char* key : {"conversations", "messages", "conversation"}) {
        if (root[key].get(list) == simdjson::SUCCESS) {
          found = true;
          break;
        }
      }
      if (!found || list.get_array().get(turns))
        return invalid_argument(where_ + ": part '" + conv_part + "' has no conversation list");
      dom::element t;
      if (root["tools"].get(t) == simdjson::SUCCESS && !t.is_null()) {
        if (!t.is_array()) return invalid_argument(where_ + ": 'tools' must be a list");
        tools = simdjson::minify(t);
      }
    } else if (root.get_array().get(turns)) {
      return invalid_argument(where_ + ": part '" + conv_part + "' is neither a list of turns nor an object holding one");
    }
    if (turns.size() == 0) return invalid_argument(where_ + ": the conversation is empty");

    std::string out = "{\"messages\":[";
    std::size_t index = 0;
    for (dom::element turn : turns) {
      dom::object obj;
      if (turn.get_object().get(obj))
        return invalid_argument(where_ + ": turn " + std::to_string(index) + " is not an object");
      if (index++) out += ',';
      STOKER_RETURN_IF_ERROR(write_turn(obj, index - 1, &out));
    }
    out += ']';
    if (!tools.empty()) out += ",\"tools\":" + tools;
    out += '}';
    if (next_image_ != images_.size() || next_video_ != videos_.size())
      return invalid_argument(where_ + ": " + std::to_string(next_image_) + " image and " + std::to_string(next_video_) +
                              " video placeholder(s) in the conversation, but " + std::to_string(images_.size()) +
                              " image(s) and " + std::to_string(videos_.size()) + " video(s) in the sample");
    record_.text = std::move(out);
    record_.location = where_;
    record_.base = dirname_of(shard_.name());
    record_.subflavors = config_.subflavors == "{}" ? std::string() : config_.subflavors;
    return std::move(record_);
  }

 private:
  Status load(const char* field, bool video, std::vector<Medium>* out) {
    const std::string* name = config_.field(field);
    if (!name) return ok_status();
    const WdsPart* part = sample_.find(*name);
    if (!part) return ok_status();  // an optional field (text-only samples)
    const std::string ext = last_extension(*name);
    const std::string pw = where_ + ": part '" + *name + "'";
    const bool pickled = video ? one_of(ext, {"videos", "mp4s"}) : ext == "jpgs";
    if (!pickled) {
      const bool single = video ? one_of(ext, {"mp4", "webm", "mkv", "mov", "avi"})
                                : one_of(ext, {"jpg", "jpeg", "png", "webp", "ppm", "pgm", "pbm", "pnm"});
      if (!single)
        return invalid_argument(pw + ": a " + field + " part must be " +
                                (video ? "videos/mp4s (pickled frame lists) or a video file"
                                       : "jpgs (a pickled list) or an image"));
      out->push_back({{ByteRange{shard_.name(), part->offset, part->size}}, false});
      return ok_status();
    }
    STOKER_ASSIGN_OR_RETURN(auto bytes, part_bytes(shard_, sample_, *part));
    auto value = read_pickle(bytes, limits_);
    if (!value.ok()) return std::move(value).error().with_context(pw);
    auto range = [&](const PickleValue& v) { return ByteRange{shard_.name(), part->offset + static_cast<std::int64_t>(v.offset), static_cast<std::int64_t>(v.length)}; };
    if (!value->is_sequence()) return invalid_argument(pw + ": the pickle is not a list");
    for (const PickleValue& item : value->items) {
      if (!video) {
        if (item.kind != PickleValue::Kind::kBytes) return invalid_argument(pw + ": an item of the pickled list is not bytes");
        out->push_back({{range(item)}, false});
        continue;
      }
      if (!item.is_sequence()) return invalid_argument(pw + ": a video of the pickled list is not a list of frames");
      Medium m;
      m.frame_list = true;
      for (const PickleValue& frame : item.items) {
        if (frame.kind != PickleValue::Kind::kBytes) return invalid_argument(pw + ": a video frame is not bytes");
        m.frames.push_back(range(frame));
      }
      if (m.frames.empty()) return invalid_argument(pw + ": a video with no frames");
      out->push_back(std::move(m));
    }
    return ok_status();
  }

  // The next image/video as a JSON value ("@imgs/0" or ["@videos/0/0", ...]).
  Result<std::string> take(bool video) {
    std::vector<Medium>& list = video ? videos_ : images_;
    std::size_t& next = video ? next_video_ : next_image_;
    if (next >= list.size())
      return invalid_argument(where_ + ": more " + (video ? "video" : "image") + " placeholders than the " +
                              std::to_string(list.size()) + " " + (video ? "video(s)" : "image(s)") + " in the sample");
    const Medium& m = list[next];
    const std::string base = std::string(video ? "@videos/" : "@imgs/") + std::to_string(next++);
    if (!m.frame_list) {
      record_.media.emplace_back(base, m.frames[0]);
      return json_string(base);
    }
    std::string arr = "[";
    for (std::size_t f = 0; f < m.frames.size(); ++f) {
      const std::string ref = base + "/" + std::to_string(f);
      record_.media.emplace_back(ref, m.frames[f]);
      if (f) arr += ',';
      append_json_string(arr, ref);
    }
    return arr + "]";
  }

  Status media_part(bool video, std::string* out) {
    STOKER_ASSIGN_OR_RETURN(std::string value, take(video));
    *out += std::string("{\"type\":\"") + (video ? "video" : "image") + "\",\"" + (video ? "video" : "image") + "\":" + value + "}";
    return ok_status();
  }

  Status write_content(dom::element content, std::string* out) {
    std::string_view text;
    if (content.get_string().get(text) == simdjson::SUCCESS) {
      if (text.find("<image>") == std::string_view::npos && text.find("<video>") == std::string_view::npos) {
        append_json_string(*out, text);
        return ok_status();
      }
      *out += '[';
      bool first = true;
      std::size_t at = 0;
      while (at <= text.size()) {
        const std::size_t i = text.find("<image>", at), v = text.find("<video>", at);
        const std::size_t tag = std::min(i, v);
        const std::string_view piece = text.substr(at, tag == std::string_view::npos ? std::string_view::npos : tag - at);
        if (!piece.empty()) {
          *out += first ? "" : ",";
          *out += "{\"type\":\"text\",\"text\":";
          append_json_string(*out, piece);
          *out += '}';
          first = false;
        }
        if (tag == std::string_view::npos) break;
        *out += first ? "" : ",";
        first = false;
        STOKER_RETURN_IF_ERROR(media_part(tag == v, out));
        at = tag + 7;
      }
      *out += ']';
      return ok_status();
    }
    dom::array items;
    if (content.get_array().get(items)) {
      *out += simdjson::minify(content);
      return ok_status();
    }
    *out += '[';
    bool first = true;
    for (dom::element item : items) {
      *out += first ? "" : ",";
      first = false;
      dom::object obj;
      std::string_view type;
      if (item.get_object().get(obj) || obj["type"].get_string().get(type) ||
          (type != "image" && type != "video") || obj[type == "image" ? "image" : "video"].error() == simdjson::SUCCESS) {
        *out += simdjson::minify(item);
        continue;
      }
      STOKER_ASSIGN_OR_RETURN(std::string value, take(type == "video"));
      *out += '{';
      for (dom::key_value_pair kv : obj) {
        append_json_string(*out, kv.key);
        *out += ':' + simdjson::minify(kv.value) + ',';
      }
      append_json_string(*out, type);
      *out += ':' + value + '}';
    }
    *out += ']';
    return ok_status();
  }

  Status write_turn(dom::object turn, std::size_t index, std::string* out) {
    std::string_view from;
    const bool sharegpt = turn["from"].error() == simdjson::SUCCESS;
    *out += "{\"role\":";
    if (sharegpt) {
      if (turn["from"].get_string().get(from))
        return invalid_argument(where_ + ": turn " + std::to_string(index) + ": 'from' must be a string");
      append_json_string(*out, from == "human" ? "user" : from == "gpt" ? "assistant" : from);
    } else {
      dom::element role;
      if (turn["role"].get(role))
        return invalid_argument(where_ + ": turn " + std::to_string(index) + " has neither 'role' nor 'from'");
      *out += simdjson::minify(role);
    }
    *out += ",\"content\":";
    dom::element content;
    if (turn[sharegpt ? "value" : "content"].get(content) == simdjson::SUCCESS) {
      STOKER_RETURN_IF_ERROR(write_content(content, out));
    } else {
      *out += "\"\"";
    }
    for (dom::key_value_pair kv : turn) {
      if (kv.key == "role" || kv.key == "content" || (sharegpt && (kv.key == "from" || kv.key == "value"))) continue;
      *out += ',';
      append_json_string(*out, kv.key);
      *out += ':' + simdjson::minify(kv.value);
    }
    *out += '}';
    return ok_status();
  }

  const WdsShard& shard_;
  const WdsSample& sample_;
  const EnergonSampleConfig& config_;
  PickleLimits limits_;
  std::string where_;
  std::vector<Medium> images_, videos_;
  std::size_t next_image_ = 0, next_video_ = 0;
  SourceRecord record_;
};

}  // namespace

std::string sample_location(const WdsShard& shard, const WdsSample& sample) {
  return shard.name() + ": sample " + std::to_string(sample.index) + " (key '" + sample.key + "')";
}

Result<SourceRecord> crude_record(const WdsShard& shard, const WdsSample& sample) {
  SourceRecord r;
  r.location = sample_location(shard, sample);
  r.base = dirname_of(shard.name());
  const WdsPart* json = sample.find("json");
  if (!json) {
    for (const WdsPart& p : sample.parts) {
      if (p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".json") == 0) {
        if (json) return invalid_argument(r.location + ": no 'json' part and several parts ending in .json");
        json = &p;
      }
    }
  }
  if (!json) return invalid_argument(r.location + ": no 'json' part (the record, by stoker's CrudeWebdataset convention)");
  STOKER_ASSIGN_OR_RETURN(auto bytes, part_bytes(shard, sample, *json));
  r.text.assign(bytes.begin(), bytes.end());
  for (const WdsPart& p : sample.parts) {
    if (&p == json) continue;
    const ByteRange range{shard.name(), p.offset, p.size};
    const std::string base_name = p.member.substr(p.member.rfind('/') == std::string::npos ? 0 : p.member.rfind('/') + 1);
    r.media.emplace_back(p.name, range);
    if (base_name != p.name) r.media.emplace_back(base_name, range);
    if (p.member != base_name) r.media.emplace_back(p.member, range);
  }
  return r;
}

Result<SourceRecord> chatml_record(const WdsShard& shard, const WdsSample& sample,
                                   const EnergonSampleConfig& config, const PickleLimits& limits) {
  if (!config.field("conversation"))
    return invalid_argument(sample_location(shard, sample) + ": no field_map.conversation");
  ChatmlBuilder b(shard, sample, config, limits);
  return b.build();
}

}  // namespace stoker::dataset
