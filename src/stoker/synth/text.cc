#include "stoker/synth/text.h"

#include <cstddef>
#include <string_view>

namespace stoker::synth {
namespace {

using sv = std::string_view;

const sv kWords[] = {
    "the", "a", "image", "shows", "small", "large", "red", "blue", "green", "bright", "dark",
    "building", "river", "mountain", "street", "car", "tree", "sign", "person", "people", "dog",
    "cat", "table", "chart", "graph", "document", "receipt", "invoice", "menu", "screen",
    "button", "window", "sky", "cloud", "shadow", "corner", "left", "right", "top", "bottom",
    "center", "near", "behind", "under", "with", "without", "and", "or", "but", "is", "are",
    "appears", "seems", "likely", "probably", "about", "approximately", "total", "value",
    "column", "row", "label", "title", "axis", "pattern", "texture", "gradient", "stripe",
    "checkerboard", "circle", "ring", "edge", "noise", "photo", "scene", "object", "there",
    "several", "three", "many", "no", "one", "two", "it's", "don't", "won't", "they're",
    "café", "naïve", "résumé", "Zürich", "São", "Paulo", "Ångström", "façade", "OpenAI", "Qwen2.5-VL",
    "HTTP/2", "e-mail", "state-of-the-art", "I/O", "x86_64", "C++20", "U.S.", "e.g.", "i.e.",
};

const sv kCjk[] = {
    "这张图片显示了一座城市的街道。", "图中有三个人站在桥上，背景是山。",
    "请描述图片中的内容。", "表格的第二列是价格（单位：元）。", "我认为答案是「蓝色」。",
    "この画像には猫が写っています。", "左上の文字を読んでください。", "東京タワーの写真です！",
    "이 사진에는 강아지가 있습니다.", "오른쪽 아래에 있는 숫자는 무엇입니까?",
    "总计：１２３４５元，税率６％。", "數據來源：國家統計局（２０２４年）。",
};

const sv kOther[] = {
    "مرحبا بالعالم، هذه صورة جميلة.", "שלום עולם", "Привет, мир! Это тестовое изображение.",
    "Γειά σου Κόσμε", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Xin chào thế giới",
    "e\xcc\x81t\xc3\xa9 (combining vs precomposed)", "ﬁne ligature ﬀ", "Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ",
};

const sv kEmoji[] = {
    "😀", "🎉", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "🇺🇸", "❤️", "🔥🔥🔥", "🤖", "📷", "✅", "❌", "⚠️", "🏳️‍🌈",
    "🧑🏿‍💻", "😂😂", "🙏", "⭐", "🐱", "🐶", "👀",
};

const sv kPunct[] = {
    "...", "!!!", "?!", "—", " – ", "«", "»", "“", "”", "‘", "’", "（", "）", "、", "。", "…",
    "!?", ";", ":", "::", "->", "=>", "<=", "!=", "&&", "||", "#", "@", "$", "%", "^", "~~", "`",
    "\"", "'", "\\", "/", "[", "]", "{", "}", "<", ">", "|", "*", "**", "__", "==", "+-",
};

const sv kSpaces[] = {
    "  ", "   ", "    ", "\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", "\r\n", "  \n\n  ",
    "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\x8b", "\xef\xbb\xbf", " \t \t", "\n\t\t",
};

const sv kCode[] = {
    "```python\ndef area(w, h):\n    return w * h  # pixels\n\nprint(area(1920, 1080))\n```",
    "```cpp\nfor (int i = 0; i < n; ++i) {\n\tsum += v[i] * 0.5f;\n}\n```",
    "```json\n{\"width\": 640, \"height\": 480, \"tags\": [\"a\", \"b\"], \"ok\": true}\n```",
    "`x = np.zeros((3, 224, 224), dtype=np.float32)`",
    "```bash\nfind . -name '*.jpg' | xargs -n1 identify | awk '{print $3}'\n```",
    "```\n    indented with spaces\n\tindented with a tab\n        deeper\n```",
    "<div class=\"caption\">Figure&nbsp;1 &amp; 2</div>",
    "SELECT id, COUNT(*) FROM images WHERE w > 1024 GROUP BY id;",
};

const sv kQuestions[] = {
    "What is shown in this image?", "Describe the image in detail.",
    "How many objects can you count?", "What colour is the largest shape?",
    "Read the text in the top-left corner.", "Is there a person in the picture? Answer yes or no.",
    "What is the total on the receipt?", "Summarise the chart in two sentences.",
    "Compare the images.", "Which image is brighter, and why?", "Extract the table as JSON.",
    "What pattern repeats across the image?", "Write a caption (max 20 words).",
    "图片里有什么？", "この画像を説明してください。", "이 이미지에 무엇이 있나요?",
};

const sv kSystem[] = {
    "You are a helpful assistant.",
    "You are a careful visual assistant. Answer concisely; say \"I don't know\" when unsure.",
    "You are an OCR engine. Output the text exactly as it appears, preserving line breaks.",
    "你是一个乐于助人的助手。请用中文回答。",
    "Respond in JSON only: {\"answer\": string, \"confidence\": number}.",
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
};

void append_number(Rng& rng, std::string& out) {
  switch (rng.below(7)) {
    case 0: out += std::to_string(rng.below(10)); break;
    case 1: out += std::to_string(rng.below(100000)); break;
    case 2: out += std::to_string(rng.below(1000)) + "." + std::to_string(rng.below(100000)); break;
    case 3: out += "2026-" + std::to_string(1 + rng.below(12)) + "-" + std::to_string(1 + rng.below(28)); break;
    case 4: out += std::to_string(1 + rng.below(999)) + "," + std::to_string(100 + rng.below(900)) + "," +
                   std::to_string(100 + rng.below(900)); break;
    case 5: out += "-" + std::to_string(rng.below(50)) + "." + std::to_string(rng.below(10)) + "%"; break;
    default: {
      int digits = rng.range(12, 40);  // a long digit run: tokenizers split digits one per token
      for (int i = 0; i < digits; ++i) out += static_cast<char>('0' + rng.below(10));
    }
  }
}

void append_sentence(Rng& rng, std::string& out) {
  int words = rng.range(3, 18);
  for (int i = 0; i < words; ++i) {
    sv w = rng.pick(kWords);
    if (i == 0 && !w.empty() && w[0] >= 'a' && w[0] <= 'z') {
      out += static_cast<char>(w[0] - 'a' + 'A');
      out += w.substr(1);
    } else {
      out += w;
    }
    if (i + 1 < words) out += rng.chance(0.08) ? ", " : " ";
  }
  out += rng.chance(0.85) ? "." : rng.pick(kPunct);
}

// One segment of mixed content; English dominates as in real data.
void append_segment(Rng& rng, std::string& out) {
  static const double kWeights[] = {50, 10, 4, 6, 6, 5, 6, 4, 4};
  switch (rng.weighted(kWeights)) {
    case 0: append_sentence(rng, out); break;
    case 1: out += rng.pick(kCjk); break;
    case 2: out += rng.pick(kOther); break;
    case 3: out += rng.pick(kEmoji); if (rng.chance(0.5)) out += rng.pick(kEmoji); break;
    case 4: append_number(rng, out); break;
    case 5: out += "\n"; out += rng.pick(kCode); out += "\n"; break;
    case 6: out += rng.pick(kSpaces); break;
    case 7: out += rng.pick(kPunct); if (rng.chance(0.3)) out += rng.pick(kPunct); break;
    default: {
      int items = rng.range(2, 5);
      for (int i = 0; i < items; ++i) {
        if (rng.chance(0.5)) {
          out += "\n- ";
        } else {
          out += '\n';
          out += std::to_string(i + 1);
          out += ". ";
        }
        append_sentence(rng, out);
      }
      out += "\n";
    }
  }
}

void append_until(Rng& rng, std::string& out, size_t target) {
  while (out.size() < target) {
    if (!out.empty() && out.back() != '\n' && out.back() != ' ') out += ' ';
    append_segment(rng, out);
  }
}

}  // namespace

std::string system_prompt(Rng& rng) {
  std::string s(rng.pick(kSystem));
  if (rng.chance(0.2)) append_until(rng, s, s.size() + rng.range(20, 300));
  return s;
}

std::string user_text(Rng& rng, int images) {
  std::string s;
  if (images > 1 && rng.chance(0.4)) {
    s = "There are ";
    s += std::to_string(images);
    s += " images. ";
  }
  s += rng.pick(kQuestions);
  if (rng.chance(0.4)) {
    s += rng.chance(0.5) ? " " : "\n";
    append_until(rng, s, s.size() + rng.range(10, rng.chance(0.2) ? 1500 : 200));
  }
  return s;
}

std::string assistant_text(Rng& rng) {
  static const double kLengths[] = {25, 50, 20, 5};  // one word, short, medium, long
  std::string s;
  switch (rng.weighted(kLengths)) {
    case 0: {
      static const sv kShort[] = {"Yes.", "No.", "3", "Blue", "蓝色", "42", "👍", "N/A", "true", "7.5%"};
      s = rng.pick(kShort);
      break;
    }
    case 1: append_until(rng, s, rng.range(20, 200)); break;
    case 2: append_until(rng, s, rng.range(200, 1200)); break;
    default: append_until(rng, s, rng.range(1200, 4000)); break;
  }
  return s;
}

}  // namespace stoker::synth
