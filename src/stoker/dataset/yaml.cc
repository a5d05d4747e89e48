#include "stoker/dataset/yaml.h"

#include <cstdio>
#include <optional>
#include <unordered_set>


namespace stoker::dataset {
namespace {

constexpr int kMaxDepth = 64;

bool valid_utf8(std::string_view s, std::size_t* bad) {
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    bool ok = n >= 0 && i + static_cast<std::size_t>(n) < s.size();
    std::uint32_t cp = n <= 0 ? c : c & (0x3fu >> n);
    for (int k = 1; ok && k <= n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (ok && ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
               (cp >= 0xd800 && cp <= 0xdfff)))
      ok = false;
    if (!ok) {
      *bad = i;
      return false;
    }
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

class Parser {
 public:
  Parser(std::string text, const std::string& name) : t_(std::move(text)), name_(name) {}

  Result<YamlNode> document() {
    STOKER_RETURN_IF_ERROR(check_characters());
    int ind = next_content();
    if (ind == 0 && starts_marker("---")) {
      pos_ += 3;
      col_ += 3;
      skip_inline();
      if (!at_eol()) return err("content after '---' is not supported");
      ind = next_content();
    }
    if (ind == -2) return tab_status();
    YamlNode root;
    if (ind >= 0) {
      if (ind == 0 && starts_marker("...")) return end_of_document(root);
      STOKER_ASSIGN_OR_RETURN(root, block_node(ind, 0));
      ind = next_content();
      if (ind == -2) return tab_status();
    }
    if (ind >= 0) {
      if (ind == 0 && starts_marker("---")) return err("several documents in one file are not supported");
      if (ind == 0 && starts_marker("...")) return end_of_document(root);
      return err(ind > 0 ? "unexpected indentation (multi-line plain scalars are not supported: quote the value)"
                         : "unexpected content after the document");
    }
    return root;
  }

 private:
  // --- characters and positions ---
  char peek(std::size_t k = 0) const { return pos_ + k < t_.size() ? t_[pos_ + k] : '\0'; }
  bool eof() const { return pos_ >= t_.size(); }
  void advance() {
    if (t_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  Error err(const std::string& why) const { return err_at(line_, col_, why); }
  Error err_at(int line, int col, const std::string& why) const {
    return invalid_argument(name_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + why);
  }
  bool blank(char c) const { return c == ' ' || c == '\t'; }
  bool at_eol() const { return eof() || peek() == '\n' || (peek() == '#'); }
  void skip_inline() {
    while (!eof() && blank(peek())) advance();
  }
  bool starts_marker(const char* m) const {
    return t_.compare(pos_, 3, m) == 0 && (pos_ + 3 >= t_.size() || blank(t_[pos_ + 3]) || t_[pos_ + 3] == '\n');
  }
  Result<YamlNode> end_of_document(YamlNode root) {
    pos_ += 3;
    col_ += 3;
    skip_inline();
    if (!at_eol()) return err("content after '...'");
    while (!eof() && peek() != '\n') advance();
    if (next_content() != -1) return err("content after the end of the document");
    return root;
  }

  Status check_characters() {
    if (t_.compare(0, 3, "\xEF\xBB\xBF") == 0) t_.erase(0, 3);
    std::string norm;
    norm.reserve(t_.size());
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (t_[i] == '\r') {
        norm += '\n';
        if (i + 1 < t_.size() && t_[i + 1] == '\n') ++i;
      } else {
        norm += t_[i];
      }
    }
    t_.assign(1, '\n');
    t_ += norm;
    std::size_t bad = 0;
    if (!valid_utf8(t_, &bad)) return locate(bad, "invalid UTF-8");
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(t_[i]);
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return locate(i, "control character");
    }
    return ok_status();
  }
  Error locate(std::size_t at, const std::string& why) const {
    int line = 0, col = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return err_at(line, col, why);
  }

  // From the end of a line (or the start of the text, which begins with a synthetic '\n'):
  // skip a trailing comment, blank and comment-only lines; stop at the first content character.
  // Returns its column - 1 (the indent), -1 at the end, -2 for a tab in indentation.
  int next_content() {
    for (;;) {
      skip_inline();
      if (!eof() && peek() == '#')
        while (!eof() && peek() != '\n') advance();
      if (eof()) return -1;
      if (peek() != '\n') return col_ - 1;  // already at a line's first content character
      advance();
      while (!eof() && peek() == ' ') advance();
      if (!eof() && peek() == '\t') {
        std::size_t p = pos_;
        while (p < t_.size() && blank(t_[p])) ++p;
        if (p < t_.size() && t_[p] != '\n' && t_[p] != '#') {
          tab_line_ = line_;
          tab_col_ = col_;
          return -2;
        }
        continue;  // a blank or comment line: skip_inline eats the tabs
      }
      if (!eof() && peek() != '\n' && peek() != '#') return col_ - 1;
    }
  }
  Error tab_status() const {
    return err_at(tab_line_, tab_col_, "tab in indentation (YAML allows spaces only)");
  }

  bool document_marker(int ind) const { return ind == 0 && (starts_marker("---") || starts_marker("...")); }

  // --- block context ---
  bool seq_indicator() const {
    return peek() == '-' && (pos_ + 1 >= t_.size() || blank(peek(1)) || peek(1) == '\n');
  }
  Status refuse_indicator() const {
    switch (peek()) {
      case '&': return err("anchors are not supported");
      case '*': return err("aliases are not supported");
      case '!': return err("tags are not supported");
      case '|': case '>': return err("block scalars (| and >) are not supported");
      case '%': return err("directives are not supported");
      case '@': case '`': return err(std::string(1, peek()).append(" cannot start a plain scalar"));
      case '?':
        if (pos_ + 1 >= t_.size() || blank(peek(1)) || peek(1) == '\n') return err("complex keys ('? ') are not supported");
        break;
      default: break;
    }
    return ok_status();
  }

  Result<YamlNode> block_node(int indent, int depth) {
    if (depth > kMaxDepth) return err("nested deeper than " + std::to_string(kMaxDepth));
    if (seq_indicator()) return block_seq(indent, depth);
    STOKER_RETURN_IF_ERROR(refuse_indicator());
    if (peek() == '[' || peek() == '{') {
      STOKER_ASSIGN_OR_RETURN(YamlNode n, flow_node(depth));
      STOKER_RETURN_IF_ERROR(expect_eol());
      return n;
    }
    const int line = line_, col = col_;
    STOKER_ASSIGN_OR_RETURN(YamlNode key, scalar(false));
    skip_inline();
    if (peek() == ':' && (blank(peek(1)) || peek(1) == '\n' || pos_ + 1 >= t_.size())) {
      if (key.kind != YamlNode::Kind::kScalar) return err_at(line, col, "a map key must be a scalar");
      return block_map(indent, std::move(key), depth);
    }
    STOKER_RETURN_IF_ERROR(expect_eol());
    return key;
  }

  Status expect_eol() {
    skip_inline();
    if (!at_eol()) {
      if (peek() == ':') return err("unexpected ':' (a map cannot start on this line)");
      return err("unexpected '" + std::string(1, peek()) + "'");
    }
    return ok_status();
  }

  Result<YamlNode> block_map(int indent, YamlNode key, int depth) {
    YamlNode map;
    map.kind = YamlNode::Kind::kMap;
    map.line = key.line;
    map.col = key.col;
    std::unordered_set<std::string> seen;
    for (;;) {
      advance();  // ':'
      STOKER_ASSIGN_OR_RETURN(YamlNode value, map_value(indent, depth));
      if (!seen.insert(key.scalar).second) return err_at(key.line, key.col, "duplicate key '" + key.scalar + "'");
      map.entries.push_back(YamlEntry{std::move(key.scalar), std::move(value)});
      const int ind = next_content();
      if (ind == -2) return tab_status();
      if (ind < indent || document_marker(ind)) break;
      if (ind > indent) return err("unexpected indentation (multi-line plain scalars are not supported: quote the value)");
      if (seq_indicator()) return err("a list item where a key of the map at column " + std::to_string(indent + 1) + " was expected");
      STOKER_RETURN_IF_ERROR(refuse_indicator());
      if (peek() == '[' || peek() == '{') return err("a flow collection cannot be a key");
      STOKER_ASSIGN_OR_RETURN(key, scalar(false));
      skip_inline();
      if (!(peek() == ':' && (blank(peek(1)) || peek(1) == '\n' || pos_ + 1 >= t_.size())))
        return err("expected ':' after the key '" + key.scalar + "'");
    }
    return map;
  }

  Result<YamlNode> map_value(int indent, int depth) {
    skip_inline();
    if (at_eol()) {
      const int ind = next_content();
      if (ind == -2) return tab_status();
      if (ind > indent) return block_node(ind, depth + 1);
      if (ind == indent && seq_indicator()) return block_seq(indent, depth + 1);  // indentless list
      YamlNode empty;
      return empty;
    }
    if (seq_indicator()) return err("a block list cannot start on its key's line");
    STOKER_RETURN_IF_ERROR(refuse_indicator());
    if (peek() == '[' || peek() == '{') {
      STOKER_ASSIGN_OR_RETURN(YamlNode n, flow_node(depth + 1));
      STOKER_RETURN_IF_ERROR(expect_eol());
      return n;
    }
    STOKER_ASSIGN_OR_RETURN(YamlNode v, scalar(false));
    STOKER_RETURN_IF_ERROR(expect_eol());
    return v;
  }

  Result<YamlNode> block_seq(int indent, int depth) {
    YamlNode seq;
    seq.kind = YamlNode::Kind::kSeq;
    seq.line = line_;
    seq.col = col_;
    for (;;) {
      advance();  // '-'
      skip_inline();
      YamlNode item;
      if (at_eol()) {
        const int ind = next_content();
        if (ind == -2) return tab_status();
        if (ind > indent) {
          STOKER_ASSIGN_OR_RETURN(item, block_node(ind, depth + 1));
        }
      } else {
        STOKER_ASSIGN_OR_RETURN(item, block_node(col_ - 1, depth + 1));
      }
      seq.items.push_back(std::move(item));
      const int ind = next_content();
      if (ind == -2) return tab_status();
      if (ind < indent || document_marker(ind)) break;
      if (ind > indent) return err("unexpected indentation (multi-line plain scalars are not supported: quote the value)");
      if (!seq_indicator()) break;  // the parent map's next key (indentless list) or an error there
    }
    return seq;
  }

  // --- flow context ---
  void skip_flow_space() {
    for (;;) {
      while (!eof() && (blank(peek()) || peek() == '\n')) advance();
      if (!eof() && peek() == '#') {
        while (!eof() && peek() != '\n') advance();
        continue;
      }
      return;
    }
  }

  Result<YamlNode> flow_node(int depth) {
    if (depth > kMaxDepth) return err("nested deeper than " + std::to_string(kMaxDepth));
    YamlNode n;
    n.line = line_;
    n.col = col_;
    const char open = peek();
    const char close = open == '[' ? ']' : '}';
    n.kind = open == '[' ? YamlNode::Kind::kSeq : YamlNode::Kind::kMap;
    std::unordered_set<std::string> seen;
    advance();
    for (;;) {
      skip_flow_space();
      if (eof()) return err_at(n.line, n.col, std::string("unclosed '") + open + "'");
      if (peek() == close) {
        advance();
        return n;
      }
      if (peek() == ',') return err("empty entry in a flow collection");
      YamlNode first;
      const int kl = line_, kc = col_;
      STOKER_ASSIGN_OR_RETURN(first, flow_value(depth));
      skip_flow_space();
      const bool is_pair = peek() == ':';
      if (n.kind == YamlNode::Kind::kSeq) {
        if (is_pair) return err("a key: value pair inside a flow list is not supported");
        n.items.push_back(std::move(first));
      } else {
        if (first.kind != YamlNode::Kind::kScalar) return err_at(kl, kc, "a map key must be a scalar");
        YamlNode value;
        if (is_pair) {
          advance();
          skip_flow_space();
          if (peek() != ',' && peek() != close) {
            STOKER_ASSIGN_OR_RETURN(value, flow_value(depth));
          }
        }
        if (!seen.insert(first.scalar).second) return err_at(kl, kc, "duplicate key '" + first.scalar + "'");
        n.entries.push_back(YamlEntry{std::move(first.scalar), std::move(value)});
      }
      skip_flow_space();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() != close) {
        if (eof()) return err_at(n.line, n.col, std::string("unclosed '") + open + "'");
        return err(std::string("expected ',' or '") + close + "'");
      }
    }
  }

  Result<YamlNode> flow_value(int depth) {
    STOKER_RETURN_IF_ERROR(refuse_indicator());
    if (peek() == '[' || peek() == '{') return flow_node(depth + 1);
    return scalar(true);
  }

  // --- scalars ---
  Result<YamlNode> scalar(bool flow) {
    YamlNode n;
    n.kind = YamlNode::Kind::kScalar;
    n.line = line_;
    n.col = col_;
    if (peek() == '"' || peek() == '\'') {
      n.quoted = true;
      STOKER_ASSIGN_OR_RETURN(n.scalar, quoted(peek()));
      return n;
    }
    const char c = peek();
    if ((c == '-' || c == ':' || c == '?') && (blank(peek(1)) || peek(1) == '\n' || pos_ + 1 >= t_.size()))
      return err(std::string("'") + c + "' cannot start a plain scalar here");
    if (c == ',' || c == ']' || c == '}' || c == '[' || c == '{' || c == '#')
      return err(std::string("unexpected '") + c + "'");
    std::size_t end = pos_;  // plain: up to ": ", " #", a line end, or (flow) an indicator
    while (end < t_.size()) {
      const char d = t_[end];
      if (d == '\n') break;
      if (d == ':' && (end + 1 >= t_.size() || blank(t_[end + 1]) || t_[end + 1] == '\n' ||
                       (flow && (t_[end + 1] == ',' || t_[end + 1] == ']' || t_[end + 1] == '}'))))
        break;
      if (d == '#' && end > pos_ && blank(t_[end - 1])) break;
      if (flow && (d == ',' || d == ']' || d == '}' || d == '[' || d == '{')) break;
      ++end;
    }
    std::size_t trimmed = end;
    while (trimmed > pos_ && blank(t_[trimmed - 1])) --trimmed;
    n.scalar = t_.substr(pos_, trimmed - pos_);
    while (pos_ < trimmed) advance();
    return n;
  }

  Result<std::string> quoted(char q) {
    const int line = line_, col = col_;
    advance();
    std::string out;
    for (;;) {
      if (eof()) return err_at(line, col, "unclosed quoted string");
      const char c = peek();
      if (c == q) {
        if (q == '\'' && peek(1) == '\'') {
          out += '\'';
          advance();
          advance();
          continue;
        }
        advance();
        return out;
      }
      if (c == '\n') {  // folding: trailing blanks dropped, one break = space, n+1 breaks = n newlines
        while (!out.empty() && blank(out.back())) out.pop_back();
        int breaks = 0;
        while (!eof() && (peek() == '\n' || blank(peek()))) {
          if (peek() == '\n') ++breaks;
          advance();
        }
        out += breaks == 1 ? std::string(" ") : std::string(static_cast<std::size_t>(breaks - 1), '\n');
        continue;
      }
      if (q == '"' && c == '\\') {
        advance();
        if (eof()) return err_at(line, col, "unclosed quoted string");
        const char e = peek();
        if (e == '\n') {  // escaped line break: joins without a space
          advance();
          while (!eof() && blank(peek())) advance();
          continue;
        }
        advance();
        switch (e) {
          case '0': out += '\0'; break;
          case 'a': out += '\a'; break;
          case 'b': out += '\b'; break;
          case 't': case '\t': out += '\t'; break;
          case 'n': out += '\n'; break;
          case 'v': out += '\v'; break;
          case 'f': out += '\f'; break;
          case 'r': out += '\r'; break;
          case 'e': out += '\x1b'; break;
          case ' ': out += ' '; break;
          case '"': out += '"'; break;
          case '/': out += '/'; break;
          case '\\': out += '\\'; break;
          case 'N': out += "\xC2\x85"; break;
          case '_': out += "\xC2\xA0"; break;
          case 'L': out += "\xE2\x80\xA8"; break;
          case 'P': out += "\xE2\x80\xA9"; break;
          case 'x': case 'u': case 'U': {
            const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            std::uint32_t cp = 0;
            for (int k = 0; k < digits; ++k) {
              const char h = peek();
              const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
              if (v < 0) return err("bad \\" + std::string(1, e) + " escape");
              cp = cp * 16 + static_cast<std::uint32_t>(v);
              advance();
            }
            if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return err("escape is not a Unicode scalar value");
            if (cp < 0x80) {
              out += static_cast<char>(cp);
            } else if (cp < 0x800) {
              out += static_cast<char>(0xc0 | (cp >> 6));
              out += static_cast<char>(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
              out += static_cast<char>(0xe0 | (cp >> 12));
              out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
              out += static_cast<char>(0x80 | (cp & 0x3f));
            } else {
              out += static_cast<char>(0xf0 | (cp >> 18));
              out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
              out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
              out += static_cast<char>(0x80 | (cp & 0x3f));
            }
            break;
          }
          default: return err(std::string("unknown escape \\") + e);
        }
        continue;
      }
      out += c;
      advance();
    }
  }

  std::string t_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int line_ = 0, col_ = 1;  // the text starts with a synthetic '\n' (line 0)
  int tab_line_ = 0, tab_col_ = 0;
};

}  // namespace

const YamlNode* YamlNode::get(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

std::string YamlNode::where(const std::string& name) const {
  return line > 0 ? name + ":" + std::to_string(line) + ":" + std::to_string(col) : name;
}

Result<YamlNode> parse_yaml(std::string_view text, const std::string& name) {
  Parser p(std::string(text), name);
  return p.document();
}

Result<YamlNode> parse_config(std::string_view text, const std::string& name) {
  if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0) return parse_json_config(text, name);
  return parse_yaml(text, name);
}

}  // namespace stoker::dataset
