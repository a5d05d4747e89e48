// A YAML subset for Energon's metadata files (.nv-meta/dataset.yaml, split.yaml, .info.yaml,
// MetadatasetV2 files) — what PyYAML's dump and hand-written configs use: block maps, block
// lists (also "indentless" under a key, PyYAML's style), flow lists/maps (may span lines),
// plain / 'single' / "double" quoted scalars (escapes, line folding), comments, a leading
// "---". Refused with "name:line:col: reason": anchors and aliases, tags, block scalars (| >),
// complex keys (?), directives, several documents, multi-line plain scalars, tabs in
// indentation, duplicate keys, control characters, invalid UTF-8, nesting deeper than 64.
// Anchors are refused because Energon's files do not use them (its loader, rapidyaml, would
// also expand merge keys differently from PyYAML).
// JSON configs (.info.json, split.json) load into the same tree via simdjson (parse_json_config).
// Scalars keep their text; energon_scalar() types them the way Energon's eyaml does.
// Pure functions, thread-safe. Errors: InvalidArgument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

struct YamlEntry;

struct YamlNode {
  enum class Kind { kNull, kScalar, kSeq, kMap };
  Kind kind = Kind::kNull;  // kNull: an empty value ("key:" with nothing after it)
  std::string scalar;
  bool quoted = false;      // a quoted scalar is always a string
  std::vector<YamlNode> items;
  std::vector<YamlEntry> entries;  // kMap: keys unique, in file order
  int line = 0, col = 0;    // 1-based, where the node starts (0 for JSON input)

  const YamlNode* get(std::string_view key) const;
  bool is_map() const { return kind == Kind::kMap; }
  bool is_seq() const { return kind == Kind::kSeq; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  // "name:line:col" (or just name without a position).
  std::string where(const std::string& name) const;
};

// A map entry (a struct, not std::pair: a pair of an incomplete YamlNode does not compile with
// clang's libstdc++ checks).
struct YamlEntry {
  std::string first;
  YamlNode second;
};

Result<YamlNode> parse_yaml(std::string_view text, const std::string& name);
Result<YamlNode> parse_json_config(std::string_view text, const std::string& name);
// By extension: ".json" -> JSON, else YAML.
Result<YamlNode> parse_config(std::string_view text, const std::string& name);

// Energon's eyaml._cast_scalar: quoted -> string; null/~ -> null; true/yes, false/no (any case)
// -> bool; a plain scalar with '.' or 'e'/'E' -> float if it parses, else int if it parses,
// else string. An empty value (kNull) -> null.
struct ScalarValue {
  enum class Type { kNull, kBool, kInt, kFloat, kString } type = Type::kNull;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
};
ScalarValue energon_scalar(const YamlNode& node);

// The tree as JSON with typed scalars (subflavors passed through to samples).
std::string yaml_to_json(const YamlNode& node);

}  // namespace stoker::dataset
