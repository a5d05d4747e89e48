// Typed values of the config tree (Energon's scalar rules), its JSON form, and JSON configs
// (.info.json, split.json) loaded into the same tree with simdjson.
#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_set>

#include "stoker/base/json_text.h"
#include "stoker/dataset/yaml.h"

namespace stoker::dataset {
namespace {

std::optional<std::int64_t> python_int(std::string_view s) {
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == s.size()) return std::nullopt;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    if (v > (std::uint64_t{1} << 63) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  if (v > (std::uint64_t{1} << 63) - (neg ? 0 : 1)) return std::nullopt;
  return neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
}

std::optional<double> python_float(std::string_view s) {
  // [sign] (digits [. digits*] | . digits) [e [sign] digits]
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t mant = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++mant;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++mant;
  }
  if (mant == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp;
    if (exp == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(std::string(s).c_str(), nullptr);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

ScalarValue energon_scalar(const YamlNode& node) {
  ScalarValue v;
  if (node.kind != YamlNode::Kind::kScalar) return v;
  if (node.quoted) {
    v.type = ScalarValue::Type::kString;
    v.s = node.scalar;
    return v;
  }
  const std::string l = lower(node.scalar);
  if (l == "null" || l == "~") return v;
  if (l == "true" || l == "yes" || l == "false" || l == "no") {
    v.type = ScalarValue::Type::kBool;
    v.b = l == "true" || l == "yes";
    return v;
  }
  if (l.find('.') != std::string::npos || l.find('e') != std::string::npos) {
    if (auto f = python_float(node.scalar)) {
      v.type = ScalarValue::Type::kFloat;
      v.f = *f;
      return v;
    }
  } else if (auto i = python_int(node.scalar)) {
    v.type = ScalarValue::Type::kInt;
    v.i = *i;
    return v;
  }
  v.type = ScalarValue::Type::kString;
  v.s = node.scalar;
  return v;
}

std::string yaml_to_json(const YamlNode& node) {
  std::string out;
  switch (node.kind) {
    case YamlNode::Kind::kNull: return "null";
    case YamlNode::Kind::kSeq:
      out = "[";
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (i) out += ',';
        out += yaml_to_json(node.items[i]);
      }
      return out + "]";
    case YamlNode::Kind::kMap:
      out = "{";
      for (std::size_t i = 0; i < node.entries.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, node.entries[i].first);
        out += ':' + yaml_to_json(node.entries[i].second);
      }
      return out + "}";
    case YamlNode::Kind::kScalar: {
      const ScalarValue v = energon_scalar(node);
      switch (v.type) {
        case ScalarValue::Type::kNull: return "null";
        case ScalarValue::Type::kBool: return v.b ? "true" : "false";
        case ScalarValue::Type::kInt: return std::to_string(v.i);
        case ScalarValue::Type::kFloat: {
          if (!std::isfinite(v.f)) return json_string(node.scalar);
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", v.f);
          std::string s = buf;
          if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
          return s;
        }
        case ScalarValue::Type::kString: return json_string(v.s);
      }
    }
  }
  return "null";
}

namespace {

namespace dom = simdjson::dom;

Result<YamlNode> from_json(dom::element e, const std::string& name, int depth) {
  if (depth > 64) return invalid_argument(name + ": nested deeper than 64");
  YamlNode n;
  switch (e.type()) {
    case dom::element_type::ARRAY: {
      n.kind = YamlNode::Kind::kSeq;
      dom::array arr;
      if (e.get_array().get(arr)) return invalid_argument(name + ": bad JSON array");
      for (dom::element c : arr) {
        STOKER_ASSIGN_OR_RETURN(YamlNode item, from_json(c, name, depth + 1));
        n.items.push_back(std::move(item));
      }
      return n;
    }
    case dom::element_type::OBJECT: {
      n.kind = YamlNode::Kind::kMap;
      std::unordered_set<std::string> seen;
      dom::object obj;
      if (e.get_object().get(obj)) return invalid_argument(name + ": bad JSON object");
      for (dom::key_value_pair kv : obj) {
        std::string key(kv.key);
        if (!seen.insert(key).second) return invalid_argument(name + ": duplicate key '" + key + "'");
        STOKER_ASSIGN_OR_RETURN(YamlNode v, from_json(kv.value, name, depth + 1));
        n.entries.push_back(YamlEntry{std::move(key), std::move(v)});
      }
      return n;
    }
    case dom::element_type::STRING:
      n.kind = YamlNode::Kind::kScalar;
      n.quoted = true;
      n.scalar = std::string(e.get_string().value_unsafe());
      return n;
    case dom::element_type::INT64: n.kind = YamlNode::Kind::kScalar; n.scalar = std::to_string(e.get_int64().value_unsafe()); return n;
    case dom::element_type::UINT64: n.kind = YamlNode::Kind::kScalar; n.scalar = std::to_string(e.get_uint64().value_unsafe()); return n;
    case dom::element_type::DOUBLE: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", e.get_double().value_unsafe());
      n.kind = YamlNode::Kind::kScalar;
      n.scalar = buf;
      if (n.scalar.find_first_of(".eE") == std::string::npos) n.scalar += ".0";
      return n;
    }
    case dom::element_type::BOOL: n.kind = YamlNode::Kind::kScalar; n.scalar = e.get_bool().value_unsafe() ? "true" : "false"; return n;
    case dom::element_type::NULL_VALUE: n.kind = YamlNode::Kind::kScalar; n.scalar = "null"; return n;
  }
  return n;
}

}  // namespace

Result<YamlNode> parse_json_config(std::string_view text, const std::string& name) {
  dom::parser parser;
  dom::element root;
  const simdjson::padded_string padded(text);
  if (auto err = parser.parse(padded).get(root); err)
    return invalid_argument(name + ": not valid JSON: " + std::string(simdjson::error_message(err)));
  return from_json(root, name, 0);
}

}  // namespace stoker::dataset
