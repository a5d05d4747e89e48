#include "stoker/bench/corpus.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "stoker/base/file.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

// Regular files under `root` whose name passes `keep`, 1 KB–1 MB, sorted (determinism), at
// most `limit` of them (evenly thinned).
std::vector<std::string> list_files(const fs::path& root, bool (*keep)(const fs::path&),
                                    std::size_t limit) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || !keep(it->path())) continue;
    const auto size = it->file_size(ec);
    if (!ec && size >= 1024 && size <= (1u << 20)) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  if (out.size() > limit) {
    std::vector<std::string> thin;
    for (std::size_t i = 0; i < limit; ++i) thin.push_back(out[i * out.size() / limit]);
    out = std::move(thin);
  }
  return out;
}

bool is_prose(const fs::path& p) {
  const std::string name = p.filename().string(), ext = p.extension().string();
  return ext == ".md" || ext == ".txt" || ext == ".rst" || name.rfind("README", 0) == 0 ||
         name == "NEWS" || name == "FAQ";
}
bool is_code(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".hpp" || ext == ".py";
}
bool is_catalogue(const fs::path& p) { return p.extension() == ".mo"; }

// The translated strings of a gettext .mo catalogue (the header entry and plural forms' NULs
// dropped), one per line.
std::string mo_translations(const std::vector<std::uint8_t>& b) {
  auto u32 = [&](std::size_t off, bool swap) -> std::uint32_t {
    if (off + 4 > b.size()) return 0;
    std::uint32_t v;
    std::memcpy(&v, b.data() + off, 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  if (b.size() < 28) return {};
  const bool swap = u32(0, false) == 0xde120495u;
  if (!swap && u32(0, false) != 0x950412deu) return {};
  const std::uint32_t n = u32(8, swap), table = u32(16, swap);
  std::string text;
  for (std::uint32_t i = 1; i < n; ++i) {
    const std::uint32_t len = u32(table + 8ull * i, swap), off = u32(table + 8ull * i + 4, swap);
    if (len == 0 || std::uint64_t{off} + len > b.size()) continue;
    std::string s(reinterpret_cast<const char*>(b.data()) + off, len);
    std::replace(s.begin(), s.end(), '\0', '\n');
    text += s;
    text += '\n';
  }
  return text;
}

class Maker {
 public:
  explicit Maker(std::uint64_t seed) : rng_(seed) {}

  // A run of whole lines of `text` (from a random line start) of about `target` bytes.
  std::string excerpt(const std::string& text, std::size_t target) {
    if (text.size() <= target) return text;
    std::size_t start = rng_() % (text.size() - target);
    const std::size_t nl = text.find('\n', start);
    start = nl == std::string::npos ? 0 : nl + 1;
    std::size_t end = text.find('\n', std::min(text.size(), start + target));
    end = end == std::string::npos ? text.size() : end + 1;
    return text.substr(start, end - start);
  }
  std::size_t size() { return 800 + rng_() % 6000; }
  std::size_t pick(std::size_t n) { return rng_() % n; }

 private:
  std::mt19937_64 rng_;
};

// Reads a random file of `files` (skipping non-UTF-8 ones), a catalogue decoded.
std::string read_some(const std::vector<std::string>& files, Maker& m, bool catalogue) {
  for (int tries = 0; tries < 8; ++tries) {
    const std::string& f = files[m.pick(files.size())];
    auto bytes = read_file(f);
    if (!bytes.ok()) continue;
    std::string text = catalogue ? mo_translations(*bytes)
                                 : std::string(bytes->begin(), bytes->end());
    if (text.size() > 200 && valid_utf8(text)) return text;
  }
  return {};
}

std::string chat_turn(const std::string& user, const std::string& assistant, Maker& m) {
  static const char* kEmoji[] = {"😀", "👍", "🎉", "🔥", "❤️", "👨‍👩‍👧", "👍🏽", "🤔", "✅", "🚀"};
  return "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>" + user + " " +
         kEmoji[m.pick(10)] + "<|im_end|>\n<|im_start|>assistant\n" + assistant + " " +
         kEmoji[m.pick(10)] + "<|im_end|>\n";
}

}  // namespace

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4)) return false;
    if (n > 0 && i + static_cast<std::size_t>(n) >= s.size()) return false;  // cut short
    for (int k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    if (n == 2) {  // no overlongs, no surrogates
      const auto d = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d >= 0xA0)) return false;
    } else if (n == 3) {
      const auto d = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xF0 && d < 0x90) || (c == 0xF4 && d >= 0x90)) return false;
    }
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

Result<Corpus> machine_corpus(std::size_t target_bytes, std::uint64_t seed) {
  const std::vector<std::string> prose = list_files("/usr/share/doc", is_prose, 4000);
  std::vector<std::string> code = list_files("/usr/include", is_code, 3000);
  for (auto& f : list_files("/usr/lib/python3", is_code, 3000)) code.push_back(f);
  std::vector<std::string> catalogues;
  std::vector<std::string> langs;
  for (const char* lang : {"zh_CN", "zh_TW", "ja", "ko", "ru", "uk", "ar", "he", "hi", "th", "vi",
                           "el", "de", "fr", "es", "pt_BR", "pl", "tr"}) {
    auto found = list_files(fs::path("/usr/share/locale") / lang / "LC_MESSAGES", is_catalogue, 40);
    if (!found.empty()) langs.push_back(lang);
    catalogues.insert(catalogues.end(), found.begin(), found.end());
  }
  if (prose.empty() || code.empty() || catalogues.empty())
    return not_found("this machine lacks a default corpus source (/usr/share/doc prose: " +
                     std::to_string(prose.size()) + " files, code: " + std::to_string(code.size()) +
                     ", gettext catalogues: " + std::to_string(catalogues.size()) +
                     "); pass --corpus FILE");
  Maker m(seed);
  Corpus c;
  std::size_t by_kind[4] = {};
  while (c.bytes < target_bytes) {
    // By documents: 35% prose, 30% code, 20% translations, 15% chat turns around prose and
    // translations.
    const std::size_t roll = m.pick(100);
    const int kind = roll < 35 ? 0 : roll < 65 ? 1 : roll < 85 ? 2 : 3;
    std::string doc;
    if (kind == 0) doc = m.excerpt(read_some(prose, m, false), m.size());
    if (kind == 1) doc = m.excerpt(read_some(code, m, false), m.size());
    if (kind == 2) doc = m.excerpt(read_some(catalogues, m, true), m.size());
    if (kind == 3)
      doc = chat_turn(m.excerpt(read_some(catalogues, m, true), 300),
                      m.excerpt(read_some(prose, m, false), 900), m);
    if (doc.empty()) continue;
    by_kind[kind] += doc.size();
    c.bytes += doc.size();
    c.docs.push_back(std::move(doc));
  }
  std::string lang_list;
  for (const auto& l : langs) lang_list += (lang_list.empty() ? "" : " ") + l;
  c.description = format(
      "from this machine's files: prose %.1f MB (%zu docs under /usr/share/doc), code %.1f MB "
      "(%zu C/C++ headers + Python modules), translations %.1f MB (%zu gettext catalogues: %s), "
      "chat turns %.1f MB",
      by_kind[0] / 1048576.0, prose.size(), by_kind[1] / 1048576.0, code.size(),
      by_kind[2] / 1048576.0, catalogues.size(), lang_list.c_str(), by_kind[3] / 1048576.0);
  return c;
}

Result<Corpus> file_corpus(const std::string& path, std::size_t max_bytes) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  Corpus c;
  auto add = [&](std::string doc) {
    if (doc.empty() || (max_bytes > 0 && c.bytes >= max_bytes)) return;
    c.bytes += doc.size();
    c.docs.push_back(std::move(doc));
  };
  const bool jsonl = path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
  std::size_t pos = 0, line_no = 0;
  std::string para;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos + (end < text.size() ? 1 : 0));
    pos = end + 1;
    ++line_no;
    if (jsonl) {
      if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("text")) j = j["text"];
      if (!j.is_string())
        return invalid_argument(path + ":" + std::to_string(line_no) +
                                ": expected a JSON string or an object with \"text\"");
      add(j.get<std::string>());
    } else {
      para += line;
      const bool blank = line.find_first_not_of(" \t\r\n") == std::string::npos;
      if (blank && para.size() >= 4096) add(std::exchange(para, {}));
    }
  }
  add(std::move(para));
  if (c.docs.empty()) return invalid_argument(path + " holds no text");
  for (const std::string& d : c.docs)
    if (!valid_utf8(d)) return invalid_argument(path + " is not valid UTF-8");
  c.description = format("from %s (%zu documents%s)", path.c_str(), c.docs.size(),
                         jsonl ? ", one per line" : ", ~4 KB each, cut at blank lines");
  return c;
}

}  // namespace stoker::bench
