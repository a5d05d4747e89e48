// Loading tokenizer.json into the byte-level BPE tokenizer, and the encode/decode pipeline:
// added tokens → NFC → Split regex → byte-level BPE (see README.md for the decisions).
#include "stoker/text/tokenizer.h"

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <unordered_map>

#include "stoker/base/file.h"
#include "stoker/text/detail/bpe.h"
#include "stoker/text/detail/offsets.h"
#include "stoker/text/detail/pretokenize.h"
#include "stoker/text/detail/unicode.h"

namespace stoker::text {
namespace {

using detail::BpeModel;
using detail::RegexSplitter;

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Leftmost-longest matcher over a handful of added tokens (Qwen has 22-26, all starting with '<').
class AddedMatcher {
 public:
  void add(const AddedToken* t) {
    if (t->content.empty()) return;
    first_[static_cast<unsigned char>(t->content[0])] = true;
    tokens_.push_back(t);
    std::stable_sort(tokens_.begin(), tokens_.end(), [](const AddedToken* a, const AddedToken* b) {
      return a->content.size() > b->content.size();
    });
  }
  bool empty() const { return tokens_.empty(); }
  // First match at or after `from`: sets *pos and returns the token, or nullptr.
  const AddedToken* find(std::string_view s, std::size_t from, std::size_t* pos) const {
    for (std::size_t i = from; i < s.size(); ++i) {
      if (!first_[static_cast<unsigned char>(s[i])]) continue;
      for (const AddedToken* t : tokens_) {  // longest first
        if (s.compare(i, t->content.size(), t->content) == 0) {
          *pos = i;
          return t;
        }
      }
    }
    return nullptr;
  }

 private:
  std::array<bool, 256> first_{};
  std::vector<const AddedToken*> tokens_;
};

// Rust's char::is_whitespace is Unicode White_Space, the same set as Oniguruma's \s.
bool is_space_cp(char32_t cp) { return detail::char_flags(detail::class_table(), cp) & detail::kSpace; }
bool is_word_cp(char32_t cp) { return detail::is_word_char(cp); }
// Start of the last code point of s[0, end) (end > 0; valid UTF-8).
std::size_t last_cp_start(std::string_view s, std::size_t end) {
  std::size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}
char32_t last_cp(std::string_view s) {
  char32_t cp;
  detail::decode_utf8(reinterpret_cast<const unsigned char*>(s.data() + last_cp_start(s, s.size())), &cp);
  return cp;
}
char32_t first_cp(std::string_view s) {
  char32_t cp;
  detail::decode_utf8(reinterpret_cast<const unsigned char*>(s.data()), &cp);
  return cp;
}

struct Piece {
  std::size_t begin, end;
  const AddedToken* token;  // nullptr: plain text
};

// HF AddedVocabulary::find_matches, including the single_word / lstrip / rstrip rules.
void split_added(std::string_view s, const AddedMatcher& m, std::vector<Piece>* out) {
  std::size_t from = 0, start_offset = 0, pos = 0;
  while (const AddedToken* t = m.find(s, from, &pos)) {
    std::size_t start = pos, stop = pos + t->content.size();
    from = stop;
    if (t->single_word) {
      const bool start_ok = start == 0 || !is_word_cp(last_cp(s.substr(0, start)));
      const bool stop_ok = stop == s.size() || !is_word_cp(first_cp(s.substr(stop)));
      if (!start_ok || !stop_ok) continue;
    }
    if (t->lstrip) {
      while (start > start_offset && is_space_cp(last_cp(s.substr(0, start))))
        start = last_cp_start(s, start);
    }
    if (t->rstrip) {
      while (stop < s.size() && is_space_cp(first_cp(s.substr(stop)))) {
        char32_t cp;
        stop += detail::decode_utf8(reinterpret_cast<const unsigned char*>(s.data() + stop), &cp);
      }
      from = stop;
    }
    if (start > start_offset) out->push_back({start_offset, start, nullptr});
    out->push_back({start, stop, t});
    start_offset = stop;
  }
  if (start_offset < s.size()) out->push_back({start_offset, s.size(), nullptr});
}

class BpeTokenizer final : public Tokenizer {
 public:
  void encode(std::string_view text, std::vector<TokenId>* out) const override {
    std::string repaired;
    if (!detail::is_valid_utf8(text)) {  // see README: lossy, as a JS/Python string would be
      repaired = detail::to_valid_utf8_lossy(text);
      text = repaired;
    }
    std::vector<Piece> pieces;
    split_added(text, raw_added_, &pieces);
    for (const Piece& p : pieces) {
      if (p.token) {
        out->push_back(p.token->id);
      } else {
        encode_normalizable(text.substr(p.begin, p.end - p.begin), out);
      }
    }
  }

  void encode_with_offsets(std::string_view text, std::vector<TokenId>* out,
                           std::vector<TextSpan>* offsets) const override {
    std::string repaired;
    std::vector<std::size_t> origin;  // repaired byte -> original byte
    if (!detail::is_valid_utf8(text)) {
      repaired = detail::to_valid_utf8_lossy(text, &origin);
      text = repaired;
    }
    const std::size_t first = offsets->size();
    std::vector<Piece> pieces;
    split_added(text, raw_added_, &pieces);
    for (const Piece& p : pieces) {
      if (p.token) {
        out->push_back(p.token->id);
        offsets->push_back({p.begin, p.end});
      } else {
        normalizable_offsets(text.substr(p.begin, p.end - p.begin), p.begin, out, offsets);
      }
    }
    if (!origin.empty()) {
      for (std::size_t i = first; i < offsets->size(); ++i) {
        TextSpan& o = (*offsets)[i];
        o = {origin[o.begin], origin[o.end]};
      }
    }
  }

  std::string decode(std::span<const TokenId> ids) const override {
    std::string bytes;
    for (TokenId id : ids) {
      if (id >= 0 && static_cast<std::size_t>(id) < id_bytes_.size()) bytes += id_bytes_[id];
    }
    return detail::is_valid_utf8(bytes) ? bytes : detail::to_valid_utf8_lossy(bytes);
  }

  std::optional<TokenId> token_to_id(std::string_view token) const override {
    auto it = token_ids_.find(std::string(token));
    if (it == token_ids_.end()) return std::nullopt;
    return it->second;
  }

  std::size_t vocab_size() const override { return vocab_size_; }

  // Filled by the loader.
  std::vector<AddedToken> added_;
  AddedMatcher raw_added_, normalized_added_;
  bool nfc_ = false;
  std::unique_ptr<RegexSplitter> regex_;  // null: the built-in Qwen matcher
  std::unique_ptr<BpeModel> bpe_;
  std::vector<std::string> id_bytes_;  // what decode() emits per id
  std::unordered_map<std::string, TokenId> token_ids_;
  std::size_t vocab_size_ = 0;

 private:
  void encode_normalizable(std::string_view s, std::vector<TokenId>* out) const {
    if (s.empty()) return;
    std::string normalized;
    if (nfc_ && !detail::is_nfc_quick(s)) {
      normalized = detail::nfc(s);
      s = normalized;
    }
    if (normalized_added_.empty()) return encode_words(s, out);
    std::vector<Piece> pieces;
    split_added(s, normalized_added_, &pieces);
    for (const Piece& p : pieces) {
      if (p.token) {
        out->push_back(p.token->id);
      } else {
        encode_words(s.substr(p.begin, p.end - p.begin), out);
      }
    }
  }

  void normalizable_offsets(std::string_view s, std::size_t base, std::vector<TokenId>* out,
                            std::vector<TextSpan>* offsets) const {
    if (s.empty()) return;
    detail::OffsetMap map;
    map.base = base;
    std::string normalized;
    if (nfc_ && !detail::is_nfc_quick(s)) {
      normalized = detail::nfc(s);
      map.chunks = detail::nfc_chunks(s, normalized);
      s = normalized;
    }
    if (normalized_added_.empty()) return words_offsets(s, 0, map, out, offsets);
    std::vector<Piece> pieces;
    split_added(s, normalized_added_, &pieces);
    for (const Piece& p : pieces) {
      if (p.token) {
        out->push_back(p.token->id);
        offsets->push_back(map(p.begin, p.end));
      } else {
        words_offsets(s.substr(p.begin, p.end - p.begin), p.begin, map, out, offsets);
      }
    }
  }

  // Words of normalised text `s` (at `at` in the normalised run): ids and, from each token's
  // bytes, its offsets. BPE tokens' bytes concatenate to the word; should they not (a
  // vocabulary entry outside the byte map), every token of the word gets the whole word.
  void words_offsets(std::string_view s, std::size_t at, const detail::OffsetMap& map,
                     std::vector<TokenId>* out, std::vector<TextSpan>* offsets) const {
    std::vector<std::size_t> ends;
    if (regex_) {
      regex_->split(s, &ends);
    } else {
      detail::split_qwen(s, &ends);
    }
    std::size_t begin = 0;
    for (std::size_t end : ends) {
      const std::size_t n0 = out->size();
      bpe_->encode_word(s.substr(begin, end - begin), out);
      std::size_t pos = begin;
      for (std::size_t i = n0; i < out->size(); ++i) {
        const TokenId id = (*out)[i];
        pos += id >= 0 && static_cast<std::size_t>(id) < id_bytes_.size() ? id_bytes_[id].size() : 0;
      }
      const bool exact = pos == end;
      pos = begin;
      for (std::size_t i = n0; i < out->size(); ++i) {
        if (!exact) {
          offsets->push_back(map(at + begin, at + end));
          continue;
        }
        const std::size_t len = id_bytes_[(*out)[i]].size();
        offsets->push_back(map(at + pos, at + pos + len));
        pos += len;
      }
      begin = end;
    }
  }

  void encode_words(std::string_view s, std::vector<TokenId>* out) const {
    thread_local std::vector<std::size_t> ends;
    ends.clear();
    if (regex_) {
      regex_->split(s, &ends);
    } else {
      detail::split_qwen(s, &ends);
    }
    std::size_t begin = 0;
    for (std::size_t end : ends) {
      bpe_->encode_word(s.substr(begin, end - begin), out);
      begin = end;
    }
  }
};


// ---- loading -------------------------------------------------------------------------------

using simdjson::dom::element;

// Ids index dense tables; a corrupt file with id 2^31 must not make us allocate gigabytes.
constexpr std::int64_t kMaxId = (1 << 24) - 1;

// simdjson says what is wrong but not where; nlohmann (error path only) gives the byte offset.
Error json_error(std::string_view json, const char* what, simdjson::error_code code) {
  std::string where;
  try {
    nlohmann::json parsed = nlohmann::json::parse(json);
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    std::size_t byte = e.byte > 0 ? e.byte - 1 : 0, line = 1, col = 1;
    for (std::size_t i = 0; i < byte && i < json.size(); ++i) {
      if (json[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    where = " at byte " + std::to_string(byte) + " (line " + std::to_string(line) + ", column " +
            std::to_string(col) + ")";
  } catch (...) {
  }
  return invalid_argument(std::string(what) + ": invalid JSON" + where + ": " +
                          simdjson::error_message(code));
}

bool is_null_or_missing(element obj, const char* key) {
  element v;
  return obj[key].get(v) != simdjson::SUCCESS || v.is_null();
}

std::string str_or(element obj, const char* key, std::string fallback) {
  std::string_view v;
  if (obj[key].get(v) == simdjson::SUCCESS) return std::string(v);
  return fallback;
}

bool bool_or(element obj, const char* key, bool fallback) {
  bool v;
  if (obj[key].get(v) == simdjson::SUCCESS) return v;
  return fallback;
}

std::string type_of(element obj) {
  if (!obj.is_object()) return "<not an object>";
  return str_or(obj, "type", "<no type>");
}

Status check_normalizer(element root, bool* nfc) {
  *nfc = false;
  if (is_null_or_missing(root, "normalizer")) return ok_status();
  element n = root["normalizer"].value_unsafe();
  const std::string type = type_of(n);
  if (type == "NFC") {
    *nfc = true;
    return ok_status();
  }
  if (type == "Sequence") {
    simdjson::dom::array list;
    if (n["normalizers"].get(list) == simdjson::SUCCESS) {
      bool ok = true;
      std::size_t count = 0;
      for (element e : list) {
        ok = ok && type_of(e) == "NFC";
        ++count;
      }
      if (ok && count <= 1) {
        *nfc = count == 1;
        return ok_status();
      }
    }
  }
  return invalid_argument("unsupported normalizer '" + type +
                          "' (supported: NFC, none): refusing rather than mis-encoding");
}

bool is_byte_level(element e, bool use_regex) {
  return type_of(e) == "ByteLevel" && !bool_or(e, "add_prefix_space", false) &&
         bool_or(e, "use_regex", true) == use_regex;
}

// Accepts Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)] and plain
// ByteLevel(use_regex=true); sets *pattern to the Split regex.
Status check_pre_tokenizer(element root, std::string* pattern) {
  const char* kWhat =
      "unsupported pre_tokenizer (supported: Sequence[Split(Regex, Isolated), "
      "ByteLevel(use_regex=false)] or ByteLevel(use_regex=true), no prefix space)";
  element p;
  if (root["pre_tokenizer"].get(p) != simdjson::SUCCESS || p.is_null())
    return invalid_argument(std::string(kWhat) + ": got none");
  if (is_byte_level(p, true)) {
    *pattern = std::string(detail::kGpt2Pattern);
    return ok_status();
  }
  simdjson::dom::array list;
  if (type_of(p) != "Sequence" || p["pretokenizers"].get(list) != simdjson::SUCCESS ||
      list.size() != 2)
    return invalid_argument(std::string(kWhat) + ": got '" + type_of(p) + "'");
  element split = list.at(0).value_unsafe(), bl = list.at(1).value_unsafe();
  std::string_view regex;
  if (type_of(split) != "Split" || split["pattern"]["Regex"].get(regex) != simdjson::SUCCESS ||
      str_or(split, "behavior", "") != "Isolated" || bool_or(split, "invert", false) ||
      !is_byte_level(bl, false))
    return invalid_argument(std::string(kWhat) + ": got Sequence[" + type_of(split) + ", " +
                            type_of(bl) + "] with other options");
  *pattern = std::string(regex);
  return ok_status();
}

Status check_model(element model) {
  const std::string type = str_or(model, "type", "BPE");
  if (type != "BPE")
    return invalid_argument("unsupported model type '" + type + "' (supported: BPE)");
  if (!is_null_or_missing(model, "dropout"))
    return invalid_argument("BPE dropout is not supported");
  if (!str_or(model, "continuing_subword_prefix", "").empty() ||
      !str_or(model, "end_of_word_suffix", "").empty())
    return invalid_argument("BPE continuing_subword_prefix/end_of_word_suffix are not supported");
  if (bool_or(model, "byte_fallback", false))
    return invalid_argument("BPE byte_fallback is not supported (byte-level BPE only)");
  return ok_status();
}

Status check_decoding(element root) {
  if (!is_null_or_missing(root, "decoder") && type_of(root["decoder"].value_unsafe()) != "ByteLevel")
    return invalid_argument("unsupported decoder '" + type_of(root["decoder"].value_unsafe()) +
                            "' (supported: ByteLevel)");
  if (!is_null_or_missing(root, "post_processor") &&
      type_of(root["post_processor"].value_unsafe()) != "ByteLevel")
    return invalid_argument("unsupported post_processor '" +
                            type_of(root["post_processor"].value_unsafe()) +
                            "' (supported: ByteLevel, none; stoker never adds BOS/EOS)");
  return ok_status();
}

Status check_config(std::string_view config_json) {
  if (config_json.empty()) return ok_status();
  simdjson::dom::parser parser;
  element cfg;
  simdjson::padded_string padded(config_json);
  if (auto err = parser.parse(padded).get(cfg)) return json_error(config_json, "tokenizer_config.json", err);
  if (bool_or(cfg, "add_bos_token", false) && !is_null_or_missing(cfg, "bos_token"))
    return invalid_argument("tokenizer_config.json: add_bos_token is not supported");
  if (bool_or(cfg, "split_special_tokens", false))
    return invalid_argument("tokenizer_config.json: split_special_tokens is not supported");
  return ok_status();
}

// HF's ByteLevel decoder: a token whose chars all map to bytes decodes to those bytes, any other
// token (e.g. an added token containing a plain space) to its own UTF-8.
std::string decoded_bytes(std::string_view token) {
  std::string bytes;
  if (detail::byte_level_to_bytes(token, &bytes)) return bytes;
  return std::string(token);
}

Status load_vocab_and_merges(element model, BpeTokenizer* t) {
  simdjson::dom::object vocab;
  if (model["vocab"].get(vocab) != simdjson::SUCCESS)
    return invalid_argument("model.vocab missing or not an object");
  std::unordered_map<std::string, TokenId>& ids = t->token_ids_;
  ids.reserve(vocab.size() * 2);
  std::unordered_map<std::string, detail::Id> whole_words;
  const bool ignore_merges = bool_or(model, "ignore_merges", false);
  for (auto [key, value] : vocab) {
    std::int64_t id;
    if (value.get(id) != simdjson::SUCCESS || id < 0 || id > kMaxId)
      return invalid_argument("model.vocab: bad id for token '" + std::string(key) + "'");
    ids.emplace(std::string(key), static_cast<TokenId>(id));
    if (static_cast<std::size_t>(id) >= t->id_bytes_.size()) t->id_bytes_.resize(id + 1);
    t->id_bytes_[id] = decoded_bytes(key);
    if (ignore_merges) {
      std::string raw;
      if (detail::byte_level_to_bytes(key, &raw)) whole_words.emplace(raw, static_cast<TokenId>(id));
    }
  }
  t->vocab_size_ = vocab.size();
  std::array<detail::Id, 256> byte_ids{};
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    detail::append_utf8(detail::byte_to_char(static_cast<std::uint8_t>(b)), &ch);
    auto it = ids.find(ch);
    if (it == ids.end())
      return invalid_argument("model.vocab lacks the byte-level token for byte " + std::to_string(b) +
                              ": not a byte-level BPE vocabulary");
    byte_ids[b] = it->second;
  }
  simdjson::dom::array merges;
  if (model["merges"].get(merges) != simdjson::SUCCESS)
    return invalid_argument("model.merges missing or not an array");
  std::vector<BpeModel::Merge> pairs;
  std::vector<detail::Id> merged;
  pairs.reserve(merges.size());
  merged.reserve(merges.size());
  std::string joined;
  std::size_t rank = 0;
  for (element m : merges) {
    std::string_view a, b;
    if (m.is_string()) {  // "a b"
      std::string_view s = m.get_string().value_unsafe();
      const std::size_t sp = s.find(' ');
      if (sp == std::string_view::npos || s.find(' ', sp + 1) != std::string_view::npos)
        return invalid_argument("model.merges[" + std::to_string(rank) + "]: expected \"a b\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.get_array().size() == 2 && m.at(0).is_string() && m.at(1).is_string()) {
      a = m.at(0).get_string().value_unsafe();  // ["a", "b"]
      b = m.at(1).get_string().value_unsafe();
    } else {
      return invalid_argument("model.merges[" + std::to_string(rank) + "]: expected \"a b\" or [\"a\",\"b\"]");
    }
    joined.assign(a);
    joined.append(b);
    auto ia = ids.find(std::string(a)), ib = ids.find(std::string(b)), ij = ids.find(joined);
    if (ia == ids.end() || ib == ids.end() || ij == ids.end())
      return invalid_argument("model.merges[" + std::to_string(rank) + "]: token not in vocab ('" +
                              std::string(a) + "' + '" + std::string(b) + "')");
    pairs.push_back({ia->second, ib->second});
    merged.push_back(ij->second);
    ++rank;
  }
  t->bpe_ = std::make_unique<BpeModel>(byte_ids, pairs, merged, ignore_merges, std::move(whole_words));
  return ok_status();
}

Status load_added_tokens(element root, BpeTokenizer* t) {
  simdjson::dom::array list;
  if (is_null_or_missing(root, "added_tokens")) return ok_status();
  if (root["added_tokens"].get(list) != simdjson::SUCCESS)
    return invalid_argument("added_tokens is not an array");
  for (element e : list) {
    AddedToken a;
    std::string_view content;
    std::int64_t id;
    if (e["content"].get(content) != simdjson::SUCCESS || e["id"].get(id) != simdjson::SUCCESS ||
        id < 0 || id > kMaxId)
      return invalid_argument("added_tokens: entry without content/id");
    a.content = std::string(content);
    a.id = static_cast<TokenId>(id);
    a.special = bool_or(e, "special", false);
    a.lstrip = bool_or(e, "lstrip", false);
    a.rstrip = bool_or(e, "rstrip", false);
    a.single_word = bool_or(e, "single_word", false);
    a.normalized = bool_or(e, "normalized", !a.special);
    t->added_.push_back(std::move(a));
  }
  for (AddedToken& a : t->added_) {
    auto [it, fresh] = t->token_ids_.emplace(a.content, a.id);
    if (fresh) ++t->vocab_size_;
    if (static_cast<std::size_t>(a.id) >= t->id_bytes_.size()) t->id_bytes_.resize(a.id + 1);
    t->id_bytes_[a.id] = decoded_bytes(a.content);
    // normalized:true tokens are looked for in normalised text, so in their normalised form.
    if (a.normalized && t->nfc_) a.content = detail::nfc(a.content);
    (a.normalized ? t->normalized_added_ : t->raw_added_).add(&a);
  }
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json(std::string_view tokenizer_json,
                                                        std::string_view tokenizer_config_json) {
  simdjson::dom::parser parser;
  element root;
  simdjson::padded_string padded(tokenizer_json);
  if (auto err = parser.parse(padded).get(root)) return json_error(tokenizer_json, "tokenizer.json", err);
  if (!root.is_object()) return invalid_argument("tokenizer.json: top level is not an object");
  element model;
  if (root["model"].get(model) != simdjson::SUCCESS || !model.is_object())
    return invalid_argument("tokenizer.json: no model object");
  auto t = std::make_unique<BpeTokenizer>();
  std::string pattern;
  STOKER_RETURN_IF_ERROR(check_model(model));
  STOKER_RETURN_IF_ERROR(check_normalizer(root, &t->nfc_));
  STOKER_RETURN_IF_ERROR(check_pre_tokenizer(root, &pattern));
  STOKER_RETURN_IF_ERROR(check_decoding(root));
  STOKER_RETURN_IF_ERROR(check_config(tokenizer_config_json));
  (void)detail::class_table();
  if (pattern != detail::kQwenPattern) {
    STOKER_ASSIGN_OR_RETURN(t->regex_, RegexSplitter::create(pattern));
  }
  STOKER_RETURN_IF_ERROR(load_vocab_and_merges(model, t.get()));
  STOKER_RETURN_IF_ERROR(load_added_tokens(root, t.get()));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

Tokenizer::~Tokenizer() = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  encode(text, &ids);
  return ids;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& folder) {
  auto json = read_text_file(folder + "/tokenizer.json");
  if (!json.ok()) return std::move(json).error().with_context("loading tokenizer from " + folder);
  std::string config;
  auto cfg = read_text_file(folder + "/tokenizer_config.json");
  if (cfg.ok()) {
    config = std::move(cfg).value();
  } else if (cfg.error().code() != ErrorCode::kNotFound) {
    return std::move(cfg).error().with_context("loading tokenizer from " + folder);
  }
  auto t = from_json(*json, config);
  if (!t.ok()) return std::move(t).error().with_context("loading tokenizer from " + folder);
  return t;
}

}  // namespace stoker::text
