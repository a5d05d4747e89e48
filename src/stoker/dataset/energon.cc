#include "stoker/dataset/energon.h"

#include <sys/stat.h>

#include <unordered_map>
#include <unordered_set>

#include "stoker/base/file.h"
#include "stoker/dataset/yaml.h"

namespace stoker::dataset {
namespace {

Error shape(const YamlNode& n, const std::string& file, const std::string& why) {
  return invalid_argument(n.where(file) + ": " + why);
}

Result<std::string> string_of(const YamlNode& n, const std::string& file, const std::string& what) {
  if (n.kind != YamlNode::Kind::kScalar) return shape(n, file, what + " must be a string");
  return n.scalar;
}

// Reads the first of `names` that exists; NotFound when none does.
Result<std::pair<std::string, std::string>> read_first(const TextReader& read, const std::string& dir,
                                                       const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    const std::string path = join_path(dir, n);
    auto text = read(path);
    if (text.ok()) return std::pair{path, std::move(*text)};
    if (text.error().code() != ErrorCode::kNotFound) return std::move(text).error();
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : " or ") + n;
  return not_found(dir + ": no " + list);
}

Result<std::vector<std::string>> expand_list(const YamlNode* list, const std::string& file, const std::string& what,
                                             std::uint64_t* budget) {
  std::vector<std::string> out;
  if (!list || list->kind == YamlNode::Kind::kNull) return out;
  if (!list->is_seq()) return shape(*list, file, what + " must be a list");
  for (const YamlNode& item : list->items) {
    STOKER_ASSIGN_OR_RETURN(std::string pattern, string_of(item, file, what + " entries"));
    auto names = brace_expand(pattern, *budget);
    if (!names.ok()) return shape(item, file, names.error().message());
    if (names->empty()) return shape(item, file, "'" + pattern + "' expands to nothing");
    *budget -= names->size();
    for (auto& n : *names) out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

const std::string* EnergonSampleConfig::field(std::string_view name) const {
  for (const auto& [k, v] : field_map)
    if (k == name) return &v;
  return nullptr;
}

std::string join_path(const std::string& dir, const std::string& rel) {
  if (rel.empty()) return dir;
  if (rel[0] == '/' || rel.find("://") != std::string::npos || dir.empty()) return rel;
  std::string r = rel;
  while (r.rfind("./", 0) == 0) r.erase(0, 2);
  return dir.back() == '/' ? dir + r : dir + "/" + r;
}

TextReader local_text_reader(std::int64_t max_bytes) {
  return [max_bytes](const std::string& path) -> Result<std::string> {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return not_found(path + ": no such file");
    if (!S_ISREG(st.st_mode)) return invalid_argument(path + ": not a regular file");
    if (st.st_size > max_bytes)
      return resource_exhausted(path + ": " + std::to_string(st.st_size) + " bytes, over the " +
                                std::to_string(max_bytes) + "-byte cap for a metadata file");
    return read_text_file(path);
  };
}

Result<EnergonSampleConfig> parse_dataset_yaml(std::string_view text, const std::string& name) {
  STOKER_ASSIGN_OR_RETURN(YamlNode root, parse_config(text, name));
  if (!root.is_map()) return shape(root, name, "expected a map with __module__ and __class__");
  EnergonSampleConfig c;
  if (const YamlNode* st = root.get("sample_type")) {
    const YamlNode* cls = st->is_map() ? st->get("__class__") : nullptr;
    return shape(*st, name, "typed samples (sample_type " + (cls ? cls->scalar : std::string("?")) +
                            ") are not supported: stoker reads CrudeWebdataset and ChatMLWebdataset folders");
  }
  const YamlNode* mod = root.get("__module__");
  const YamlNode* cls = root.get("__class__");
  if (!cls) return shape(root, name, "no __class__ (CrudeWebdataset or ChatMLWebdataset expected)");
  STOKER_ASSIGN_OR_RETURN(c.class_name, string_of(*cls, name, "__class__"));
  if (mod) {
    STOKER_ASSIGN_OR_RETURN(c.module, string_of(*mod, name, "__module__"));
  }
  if (c.class_name == "CrudeWebdataset") {
    c.format = SampleFormat::kCrude;
  } else if (c.class_name == "ChatMLWebdataset") {
    c.format = SampleFormat::kChatML;
  } else {
    return shape(*cls, name, "sample class '" + c.class_name +
                             "' is not supported: stoker reads CrudeWebdataset and ChatMLWebdataset folders");
  }
  if (const YamlNode* fm = root.get("field_map"); fm && fm->kind != YamlNode::Kind::kNull) {
    if (!fm->is_map()) return shape(*fm, name, "field_map must be a map of field: part");
    for (const auto& [k, v] : fm->entries) {
      STOKER_ASSIGN_OR_RETURN(std::string part, string_of(v, name, "field_map." + k));
      c.field_map.emplace_back(k, std::move(part));
    }
  }
  if (c.format == SampleFormat::kChatML && !c.field("conversation"))
    return shape(root, name, "ChatMLWebdataset needs field_map.conversation (the part holding the conversation)");
  if (const YamlNode* sf = root.get("subflavors"); sf && sf->kind != YamlNode::Kind::kNull) {
    if (!sf->is_map()) return shape(*sf, name, "subflavors must be a map");
    c.subflavors = yaml_to_json(*sf);
  }
  return c;
}

Result<EnergonFolder> read_energon_folder(const std::string& root_in, const std::string& split_part,
                                          const TextReader& read, std::uint64_t max_names) {
  EnergonFolder f;
  f.root = root_in;
  while (f.root.size() > 1 && f.root.back() == '/') f.root.pop_back();
  f.split_part = split_part;
  const std::string meta = join_path(f.root, ".nv-meta");

  auto dataset = read_first(read, meta, {"dataset.yaml"});
  if (!dataset.ok()) return std::move(dataset).error().with_context(f.root + ": not an Energon folder");
  STOKER_ASSIGN_OR_RETURN(f.sample, parse_dataset_yaml(dataset->second, dataset->first));

  STOKER_ASSIGN_OR_RETURN(auto info_file, read_first(read, meta, {".info.json", ".info.yaml"}));
  STOKER_ASSIGN_OR_RETURN(YamlNode info, parse_config(info_file.second, info_file.first));
  const YamlNode* counts = info.is_map() ? info.get("shard_counts") : nullptr;
  if (!counts || !counts->is_map()) return shape(info, info_file.first, "expected shard_counts: {shard: count}");
  std::unordered_map<std::string, std::int64_t> count_of;
  for (const auto& [shard, n] : counts->entries) {
    const ScalarValue v = energon_scalar(n);
    if (v.type != ScalarValue::Type::kInt || v.i < 0)
      return shape(n, info_file.first, "shard_counts['" + shard + "'] must be a count (an integer >= 0)");
    count_of.emplace(shard, v.i);
  }

  STOKER_ASSIGN_OR_RETURN(auto split_file, read_first(read, meta, {"split.yaml", "split.json"}));
  STOKER_ASSIGN_OR_RETURN(YamlNode split, parse_config(split_file.second, split_file.first));
  const YamlNode* parts = split.is_map() ? split.get("split_parts") : nullptr;
  if (!parts || !parts->is_map()) return shape(split, split_file.first, "expected split_parts: {part: [shards]}");
  const YamlNode* mine = parts->get(split_part);
  if (!mine) {
    std::string have;
    for (const auto& [k, v] : parts->entries) have += (have.empty() ? "" : ", ") + k;
    return shape(*parts, split_file.first, "no split part '" + split_part + "' (it has: " + have + ")");
  }
  std::uint64_t budget = max_names;
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> shards, expand_list(mine, split_file.first, "split_parts." + split_part, &budget));
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> excludes, expand_list(split.get("exclude"), split_file.first, "exclude", &budget));
  const std::unordered_set<std::string> excluded(excludes.begin(), excludes.end());
  std::unordered_set<std::string> in_split;
  for (const std::string& s : shards) {
    if (excluded.count(s)) continue;
    if (!in_split.insert(s).second) return shape(*mine, split_file.first, "shard '" + s + "' is listed twice");
    auto it = count_of.find(s);
    if (it == count_of.end())
      return shape(*mine, split_file.first, "shard '" + s + "' is not in " + info_file.first);
    f.shards.emplace_back(s, it->second);
  }
  if (f.shards.empty())
    return shape(*mine, split_file.first, "split part '" + split_part + "' has no shards" +
                                           (excludes.empty() ? std::string() : " after exclude"));
  for (const std::string& e : excludes) {
    if (in_split.count(e) || count_of.count(e)) continue;  // a shard exclude
    bool matched = false;
    for (std::size_t p = e.find('/'); p != std::string::npos && !matched; p = e.find('/', p + 1))
      matched = in_split.count(e.substr(0, p)) > 0;
    if (matched) {
      f.sample_excludes.push_back(e);
    } else {
      f.warnings.push_back(split_file.first + ": exclude entry '" + e + "' matches no shard of split '" + split_part + "'");
    }
  }
  return f;
}

}  // namespace stoker::dataset
