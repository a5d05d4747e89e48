#include "stoker/dataset/mixture.h"

#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "stoker/base/json_text.h"
#include "stoker/base/mix.h"
#include "stoker/dataset/yaml.h"

namespace stoker::dataset {
namespace {

using Flavors = std::vector<std::pair<std::string, std::string>>;  // key -> JSON value, ordered

enum class Blend { kNone, kWeight, kReps };

struct RawLeaf {
  MixtureLeaf::Kind kind;
  std::string path, split;
  double factor = 1;
  Flavors flavors;
  std::string where;
};

struct Traversal {
  Blend blend = Blend::kNone;
  std::vector<RawLeaf> leaves;
};

bool ends_with(std::string_view s, std::string_view t) { return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0; }

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash == 0 ? 1 : slash);
}

MixtureLeaf::Kind kind_of(const std::string& path) {
  return ends_with(path, ".jsonl") || ends_with(path, ".jsonl.gz") || ends_with(path, ".jsonl.zst")
             ? MixtureLeaf::Kind::kJsonl
             : MixtureLeaf::Kind::kEnergonFolder;
}

// {**inner, **outer}: inner's keys in order with outer's values where both set, then outer's new keys.
Flavors merge(const Flavors& inner, const Flavors& outer) {
  Flavors out = inner;
  for (const auto& [k, v] : outer) {
    bool found = false;
    for (auto& [ik, iv] : out)
      if (ik == k) {
        iv = v;
        found = true;
      }
    if (!found) out.emplace_back(k, v);
  }
  return out;
}

std::string flavors_json(const Flavors& f) {
  std::string s = "{";
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (i) s += ',';
    append_json_string(s, f[i].first);
    s += ':' + f[i].second;
  }
  return s + "}";
}

class Loader {
 public:
  Loader(const TextReader& read, const MixtureOptions& options, std::vector<std::string>* warnings)
      : read_(read), options_(options), warnings_(warnings) {}

  Result<Traversal> file(const std::string& path, std::string_view text, const std::string& split,
                         const Flavors& inherited, int depth) {
    if (depth > options_.max_depth) return invalid_argument(path + ": metadatasets nested deeper than " + std::to_string(options_.max_depth));
    for (const std::string& p : stack_)
      if (p == path) return invalid_argument(path + ": includes itself (through " + stack_.front() + ")");
    STOKER_ASSIGN_OR_RETURN(YamlNode root, parse_yaml(text, path));
    if (!root.is_map()) return err(root, path, "expected a MetadatasetV2 map");
    const YamlNode* cls = root.get("__class__");
    if (!cls || cls->scalar != "MetadatasetV2")
      return err(cls ? *cls : root, path, "__class__ must be MetadatasetV2 (other metadataset classes are not supported)");
    for (const auto& [k, v] : root.entries)
      if (k != "__module__" && k != "__class__" && k != "splits") return err(v, path, "unknown key '" + k + "'");
    const YamlNode* splits = root.get("splits");
    if (!splits || !splits->is_map()) return err(root, path, "expected splits: {" + split + ": ...}");
    const YamlNode* node = splits->get(split);
    if (!node) return err(*splits, path, "no split '" + split + "'");
    stack_.push_back(path);
    auto r = this->node(*node, path, split, inherited, depth);
    stack_.pop_back();
    return r;
  }

 private:
  static Error err(const YamlNode& n, const std::string& file, const std::string& why) {
    return invalid_argument(n.where(file) + ": " + why);
  }

  Result<double> number(const YamlNode& n, const std::string& file, const char* what) {
    const ScalarValue v = energon_scalar(n);
    double d = v.type == ScalarValue::Type::kInt ? static_cast<double>(v.i) : v.type == ScalarValue::Type::kFloat ? v.f : -1;
    if ((v.type != ScalarValue::Type::kInt && v.type != ScalarValue::Type::kFloat) || !std::isfinite(d) || d < 0)
      return err(n, file, std::string(what) + " must be a number >= 0");
    return d;
  }

  Result<Traversal> node(const YamlNode& n, const std::string& file, const std::string& split, const Flavors& inherited, int depth) {
    if (!n.is_map()) return err(n, file, "expected blend, blend_epochized or a dataset reference (path: ...)");
    const YamlNode* blend = n.get("blend");
    const YamlNode* epoch = n.get("blend_epochized");
    if (n.get("join")) return err(*n.get("join"), file, "join is not supported");
    if (!blend && !epoch) return entry(n, file, split, inherited, depth, Blend::kNone, nullptr);
    if (blend && epoch) return err(n, file, "blend and blend_epochized in one node");
    for (const auto& [k, v] : n.entries)
      if (k != "blend" && k != "blend_epochized") return err(v, file, "'" + k + "' is not supported here (only the blend list)");
    const YamlNode& list = blend ? *blend : *epoch;
    const Blend mode = blend ? Blend::kWeight : Blend::kReps;
    if (!list.is_seq() || list.items.empty()) return err(list, file, "expected a non-empty list of datasets");
    std::vector<std::pair<double, Traversal>> parts;
    double sum = 0;
    for (const YamlNode& e : list.items) {
      double f = 0;
      STOKER_ASSIGN_OR_RETURN(Traversal t, entry(e, file, split, inherited, depth, mode, &f));
      if (t.blend != Blend::kNone && t.blend != mode)
        return err(e, file, "cannot mix blend with blend_epochized (the nested metadataset uses the other)");
      sum += f;
      parts.emplace_back(f, std::move(t));
    }
    if (mode == Blend::kWeight && !(sum > 0)) return err(list, file, "the weights sum to 0");
    Traversal out;
    out.blend = mode;
    for (auto& [f, t] : parts) {
      for (RawLeaf& leaf : t.leaves) {
        const double inner = t.blend == Blend::kNone ? 1.0 : leaf.factor;
        leaf.factor = mode == Blend::kWeight ? inner * f / sum : inner * f;
        out.leaves.push_back(std::move(leaf));
        if (out.leaves.size() > options_.max_leaves)
          return err(list, file, "more than " + std::to_string(options_.max_leaves) + " datasets");
      }
    }
    return out;
  }

  // One dataset reference: a leaf, or a nested metadataset file.
  Result<Traversal> entry(const YamlNode& e, const std::string& file, const std::string& split, const Flavors& inherited,
                          int depth, Blend in, double* factor) {
    if (!e.is_map()) return err(e, file, "expected a map with path: ...");
    const YamlNode* path = nullptr;
    std::string split_part = split;
    Flavors own;
    if (factor) *factor = 1;
    for (const auto& [k, v] : e.entries) {
      if (k == "path") {
        if (!v.is_scalar()) return err(v, file, "path must be a string");
        path = &v;
      } else if ((k == "weight" && in == Blend::kWeight) || (k == "repetitions" && in == Blend::kReps)) {
        STOKER_ASSIGN_OR_RETURN(*factor, number(v, file, k.c_str()));
      } else if (k == "split_part") {
        if (!v.is_scalar()) return err(v, file, "split_part must be a string");
        split_part = v.scalar;
      } else if (k == "subflavors") {
        if (v.kind == YamlNode::Kind::kNull) continue;
        if (!v.is_map()) return err(v, file, "subflavors must be a map");
        for (const auto& [fk, fv] : v.entries) own.emplace_back(fk, yaml_to_json(fv));
      } else if (k == "shuffle_over_epochs_multiplier") {
        warnings_->push_back(v.where(file) + ": shuffle_over_epochs_multiplier is ignored (stoker's plan has its own order)");
      } else if (k == "aux" || k == "subset" || k == "dataset_config" || k == "split_config" || k == "join") {
        return err(v, file, "'" + k + "' is not supported");
      } else {
        return err(v, file, "unknown key '" + k + "'" +
                                (k == "weight" || k == "repetitions" ? " here (weight belongs to blend, repetitions to blend_epochized)" : ""));
      }
    }
    if (!path) return err(e, file, "a dataset reference needs path");
    const std::string resolved = join_path(dir_of(file), path->scalar);
    const Flavors flavors = merge(own, inherited);
    if (ends_with(resolved, ".yaml") || ends_with(resolved, ".yml")) {
      auto text = read_(resolved);
      if (!text.ok()) return std::move(text).error().with_context(path->where(file));
      return this->file(resolved, *text, split_part, flavors, depth + 1);
    }
    Traversal t;
    t.leaves.push_back(RawLeaf{kind_of(resolved), resolved, split_part, 1.0, flavors, e.where(file)});
    return t;
  }

  const TextReader& read_;
  const MixtureOptions& options_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> stack_;
};

MixtureSpec finish(MixMode mode, std::vector<RawLeaf> raw, std::vector<std::string> warnings) {
  MixtureSpec spec;
  spec.mode = mode;
  spec.warnings = std::move(warnings);
  std::unordered_map<std::string, std::size_t> seen;
  for (RawLeaf& r : raw) {
    const std::string fj = flavors_json(r.flavors);
    const std::string id = std::to_string(static_cast<int>(r.kind)) + "\n" + r.path + "\n" +
                           (r.kind == MixtureLeaf::Kind::kEnergonFolder ? r.split : std::string()) + "\n" + fj;
    if (auto it = seen.find(id); it != seen.end()) {
      MixtureLeaf& first = spec.leaves[it->second];
      (mode == MixMode::kWeighted ? first.weight : first.repetitions) += r.factor;
      spec.warnings.push_back(r.where + ": " + r.path + " is already a source (" + first.where +
                              "): merged into one, " + (mode == MixMode::kWeighted ? "weights" : "repetitions") +
                              " summed, so its samples are not read twice in the same order");
      continue;
    }
    const std::string rsplit = r.kind == MixtureLeaf::Kind::kEnergonFolder ? r.split : std::string();
    for (const MixtureLeaf& l : spec.leaves)
      if (l.path == r.path && l.split_part == rsplit)
        spec.warnings.push_back(r.where + ": " + r.path + " is also a source at " + l.where +
                                " with other subflavors: both are kept, each drawn independently");
    MixtureLeaf leaf;
    leaf.kind = r.kind;
    leaf.path = r.path;
    leaf.split_part = r.kind == MixtureLeaf::Kind::kEnergonFolder ? r.split : std::string();
    (mode == MixMode::kWeighted ? leaf.weight : leaf.repetitions) = r.factor;
    leaf.subflavors = fj;
    leaf.where = r.where;
    seen.emplace(id, spec.leaves.size());
    spec.leaves.push_back(std::move(leaf));
  }
  // Zero shares are dropped; weights renormalised.
  std::vector<MixtureLeaf> kept;
  double sum = 0;
  for (MixtureLeaf& l : spec.leaves) {
    const double f = mode == MixMode::kWeighted ? l.weight : l.repetitions;
    if (f <= 0) {
      spec.warnings.push_back(l.where + ": " + l.path + " has " + (mode == MixMode::kWeighted ? "weight" : "repetitions") + " 0: left out");
      continue;
    }
    sum += f;
    kept.push_back(std::move(l));
  }
  spec.leaves = std::move(kept);
  if (mode == MixMode::kWeighted)
    for (MixtureLeaf& l : spec.leaves) l.weight /= sum;
  std::string canon(mix_mode_name(mode));
  for (const MixtureLeaf& l : spec.leaves) {
    char f[64];
    std::snprintf(f, sizeof f, "%.17g", mode == MixMode::kWeighted ? l.weight : l.repetitions);
    for (const std::string& piece : {std::to_string(static_cast<int>(l.kind)), l.path, l.split_part, std::string(f), l.subflavors}) {
      canon += piece;
      canon += '\x1f';
    }
    canon += '\n';
  }
  std::uint64_t h = 0x5354'4f4b'4552'4d49ULL;  // "STOKERMI"
  for (unsigned char c : canon) h = mix64(h ^ c);
  spec.hash = mix64(h ^ canon.size());
  return spec;
}

}  // namespace

std::string_view mix_mode_name(MixMode m) { return m == MixMode::kWeighted ? "weighted" : "epochized"; }

std::string MixtureSpec::hash_hex() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

Result<MixtureSpec> parse_metadataset(std::string_view text, const std::string& path, const TextReader& read,
                                      const MixtureOptions& options) {
  std::vector<std::string> warnings;
  Loader loader(read, options, &warnings);
  STOKER_ASSIGN_OR_RETURN(Traversal t, loader.file(path, text, options.split_part, {}, 0));
  const MixMode mode = t.blend == Blend::kWeight ? MixMode::kWeighted : MixMode::kEpochized;
  MixtureSpec spec = finish(mode, std::move(t.leaves), std::move(warnings));
  if (spec.leaves.empty()) return invalid_argument(path + ": the mixture has no dataset with a share above 0");
  return spec;
}

Result<MixtureSpec> parse_mixture_json(std::string_view text, const std::string& path, const MixtureOptions& options) {
  STOKER_ASSIGN_OR_RETURN(YamlNode root, parse_json_config(text, path));
  if (!root.is_seq() || root.items.empty())
    return invalid_argument(path + ": expected a list of {\"path\": ..., \"weight\": w} or {\"path\": ..., \"repeat\": r}");
  std::vector<RawLeaf> raw;
  int weighted = 0, repeated = 0;
  for (std::size_t i = 0; i < root.items.size(); ++i) {
    const YamlNode& e = root.items[i];
    const std::string where = path + ": entry " + std::to_string(i);
    if (!e.is_map()) return invalid_argument(where + ": expected an object");
    RawLeaf leaf;
    leaf.where = where;
    leaf.split = options.split_part;
    bool has_path = false;
    for (const auto& [k, v] : e.entries) {
      if (k == "path" && v.is_scalar() && v.quoted) {
        leaf.path = join_path(dir_of(path), v.scalar);
        has_path = true;
      } else if (k == "weight" || k == "repeat") {
        const ScalarValue s = energon_scalar(v);
        const double d = s.type == ScalarValue::Type::kInt ? static_cast<double>(s.i) : s.f;
        if ((s.type != ScalarValue::Type::kInt && s.type != ScalarValue::Type::kFloat) || !std::isfinite(d) || d < 0)
          return invalid_argument(where + ": " + k + " must be a number >= 0");
        leaf.factor = d;
        (k == "weight" ? weighted : repeated)++;
      } else if (k == "split_part" && v.is_scalar()) {
        leaf.split = v.scalar;
      } else if (k == "subflavors" && v.is_map()) {
        for (const auto& [fk, fv] : v.entries) leaf.flavors.emplace_back(fk, yaml_to_json(fv));
      } else {
        return invalid_argument(where + ": unknown or malformed key '" + k + "'");
      }
    }
    if (!has_path) return invalid_argument(where + ": needs \"path\" (a string)");
    leaf.kind = kind_of(leaf.path);
    raw.push_back(std::move(leaf));
  }
  if (weighted && repeated) return invalid_argument(path + ": entries mix \"weight\" and \"repeat\": use one kind");
  const MixMode mode = weighted ? MixMode::kWeighted : MixMode::kEpochized;
  if (weighted && static_cast<std::size_t>(weighted) != raw.size())
    return invalid_argument(path + ": every entry needs a weight when one has one");
  MixtureSpec spec = finish(mode, std::move(raw), {});
  if (spec.leaves.empty()) return invalid_argument(path + ": the mixture has no source with a share above 0");
  return spec;
}

Result<MixtureSpec> load_mixture(const std::string& path, const TextReader& read, const MixtureOptions& options) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read(path));
  if (ends_with(path, ".json")) return parse_mixture_json(text, path, options);
  return parse_metadataset(text, path, read, options);
}

MixtureSpec plain_mixture(const std::vector<std::string>& paths, const std::string& split_part) {
  std::vector<RawLeaf> raw;
  for (const std::string& p : paths) raw.push_back(RawLeaf{kind_of(p), p, split_part, 1.0, {}, p});
  return finish(MixMode::kEpochized, std::move(raw), {});
}

}  // namespace stoker::dataset
