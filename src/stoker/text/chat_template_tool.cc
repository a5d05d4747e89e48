// Test driver for tests/text/chat_template_parity.mjs: reads JSONL records (any supported
// form) from stdin, renders each with stoker's chat template and, given a tokenizer folder,
// builds the sample with fixed vision grids. Writes one JSON object per line:
//   {"id": ..., "text": "<rendered>", "ids": [...], "labels": [...]}  or  {"id": ..., "error": "..."}
// Flags: --template NAME, --tokenizer DIR, --image-grid T,H,W, --video-grid T,H,W,
//        --video-seconds S1,S2,...  (Qwen3-VL timestamps per temporal group),
//        --add-vision-id 1  ("Picture N: " / "Video N: " before vision blocks).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "stoker/base/json_text.h"
#include "stoker/dataset/conversation.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/labels.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/text/tokenizer.h"

namespace {

using namespace stoker;


template <typename T>
std::string json_list(const std::vector<T>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(v[i]);
  }
  return out + "]";
}

std::vector<double> numbers(const std::string& s) {
  std::vector<double> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stod(item));
  return out;
}

text::VisionGrid grid(const std::string& s) {
  std::vector<double> v = numbers(s);
  if (v.size() != 3) return {};
  return {static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), {}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string template_name = "qwen2_vl", tokenizer_dir;
  text::ChatTemplateOptions options;
  text::VisionGrid image_grid{1, 4, 4, {}}, video_grid{2, 4, 4, {}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--template") template_name = value;
    else if (flag == "--tokenizer") tokenizer_dir = value;
    else if (flag == "--image-grid") image_grid = grid(value);
    else if (flag == "--video-grid") video_grid = grid(value);
    else if (flag == "--video-seconds") video_grid.group_seconds = numbers(value);
    else if (flag == "--add-vision-id") options.add_vision_id = value == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  Result<text::TemplateKind> kind = text::template_for_model(template_name);
  if (!kind.ok()) {
    std::fprintf(stderr, "%s\n", kind.error().to_string().c_str());
    return 2;
  }
  std::unique_ptr<text::Tokenizer> tok;
  if (!tokenizer_dir.empty()) {
    auto loaded = text::Tokenizer::load(tokenizer_dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.error().to_string().c_str());
      return 1;
    }
    tok = std::move(*loaded);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Result<dataset::Conversation> conv = dataset::parse_record(line);
    if (!conv.ok()) {
      std::cout << "{\"error\":" << json_string(conv.error().to_string()) << "}\n";
      continue;
    }
    std::string head = "{\"id\":" + json_string(conv->id);
    Result<text::RenderedChat> chat = text::render_chat(*conv, *kind, options);
    if (!chat.ok()) {
      std::cout << head << ",\"error\":" << json_string(chat.error().to_string()) << "}\n";
      continue;
    }
    std::cout << head << ",\"text\":" << json_string(chat->text());
    if (tok) {
      std::vector<text::VisionGrid> images(chat->num_images, image_grid);
      std::vector<text::VisionGrid> videos(chat->num_videos, video_grid);
      Result<text::TokenizedSample> s =
          text::build_sample(*conv, *kind, options, *tok, images, videos, {});
      if (!s.ok()) {
        std::cout << ",\"error\":" << json_string(s.error().to_string());
      } else {
        std::cout << ",\"ids\":" << json_list(s->input_ids)
                  << ",\"labels\":" << json_list(s->labels);
      }
    }
    std::cout << "}\n";
  }
  return 0;
}
