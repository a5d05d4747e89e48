#include "stoker/pipeline/mixture_records.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "stoker/base/redact.h"
#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"
#include "stoker/pipeline/shard_records.h"

namespace stoker::pipeline {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

dataset::TextReader reader_for(std::shared_ptr<io::ObjectStore> store) {
  return [store](const std::string& path) -> Result<std::string> {
    if (!io::is_remote_uri(path) || store == nullptr) return dataset::local_text_reader()(path);
    STOKER_ASSIGN_OR_RETURN(io::Bytes b, io::read_sync(*store, path, {.max_bytes = std::int64_t{64} << 20}));
    return std::string(b.begin(), b.end());
  };
}

// How a leaf is opened: shard lists and JSONL by their kinds, Energon folders with their split.
enum class LeafKind { kJsonl, kShards, kEnergon };
LeafKind leaf_kind(const dataset::MixtureLeaf& leaf) {
  if (is_shard_list_spec(leaf.path)) return LeafKind::kShards;
  if (leaf.kind == dataset::MixtureLeaf::Kind::kJsonl) return LeafKind::kJsonl;
  return LeafKind::kEnergon;
}

Result<io::MediaScope> leaf_scope(const dataset::MixtureLeaf& leaf, const io::MediaAccess& access) {
  switch (leaf_kind(leaf)) {
    case LeafKind::kShards: return wds_record_source_kind()->scope(leaf.path, access);
    case LeafKind::kEnergon: return energon_media_scope(leaf.path, access);
    case LeafKind::kJsonl: break;
  }
  return io::MediaScope::make(leaf.path, access);
}

Result<dataset::MixtureSpec> load_spec(std::string_view spec, std::shared_ptr<io::ObjectStore> store) {
  return dataset::load_mixture(std::string(spec), reader_for(std::move(store)));
}

// The spec's own scope, whose roots are every leaf's: the store may read beneath all of them.
Result<io::MediaScope> mixture_scope(std::string_view spec, const io::MediaAccess& access) {
  STOKER_ASSIGN_OR_RETURN(dataset::MixtureSpec m, load_spec(spec, nullptr));
  io::MediaAccess a = access;
  for (const dataset::MixtureLeaf& leaf : m.leaves) {
    Result<io::MediaScope> s = leaf_scope(leaf, access);
    if (!s.ok()) return std::move(s).error().with_context(leaf.where);
    for (const io::MediaRoot& r : s->roots()) a.media_roots.push_back(r.path);
  }
  return io::MediaScope::make(spec, a);
}

Result<std::unique_ptr<dataset::RecordSource>> open_mixture(SourceEnv env) {
  if (env.specs.size() != 1) {
    return invalid_argument("a mixture spec must be the only data argument (got " +
                            std::to_string(env.specs.size()) + " mixture specs)");
  }
  STOKER_ASSIGN_OR_RETURN(dataset::MixtureSpec m, load_spec(env.specs[0], env.store));
  if (m.leaves.empty()) return invalid_argument(env.names[0] + ": the mixture has no source");
  std::vector<std::unique_ptr<dataset::RecordSource>> leaves;
  std::vector<std::string> names;
  for (const dataset::MixtureLeaf& leaf : m.leaves) {
    SourceEnv e;
    e.options = env.options;
    e.store = env.store;
    e.cache_dir = env.cache_dir;
    e.specs = {leaf.path};
    e.names = {redact_secrets(leaf.path)};
    Result<io::MediaScope> scope = leaf_scope(leaf, env.options->access);
    if (!scope.ok()) return std::move(scope).error().with_context(leaf.where);
    e.scopes.push_back(std::move(scope).value());
    Result<std::unique_ptr<dataset::RecordSource>> src =
        leaf_kind(leaf) == LeafKind::kEnergon ? open_energon_split(leaf.path, leaf.split_part, e)
        : leaf_kind(leaf) == LeafKind::kShards ? wds_record_source_kind()->open(std::move(e))
                                               : record_source_kind("x.jsonl")->open(std::move(e));
    if (!src.ok()) return std::move(src).error().with_context(leaf.where);
    if ((*src)->size() == 0) return invalid_argument(leaf.where + ": source " + leaf.path + " has no records");
    names.push_back(redact_secrets(leaf.path));
    leaves.push_back(std::move(src).value());
  }
  return std::unique_ptr<dataset::RecordSource>(new MixtureRecords(std::move(m), std::move(leaves), std::move(names)));
}

const RecordSourceKind kMixture = {"mixture", [](std::string_view s) { return is_mixture_spec(s); }, open_mixture,
                                   mixture_scope};

}  // namespace

const RecordSourceKind* mixture_record_source_kind() { return &kMixture; }

bool is_mixture_spec(std::string_view spec) {
  if (ends_with(spec, ".yaml") || ends_with(spec, ".yml")) {
    std::error_code ec;
    return io::is_remote_uri(spec) || !std::filesystem::is_directory(std::string(spec), ec);
  }
  if (!ends_with(spec, ".json") || io::is_remote_uri(spec)) return false;
  // The JSON form is a list; a JSONL manifest named .json holds objects.
  FILE* f = std::fopen(std::string(spec).c_str(), "rb");
  if (f == nullptr) return false;
  int c = 0;
  while ((c = std::fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  std::fclose(f);
  return c == '[';
}

MixtureRecords::MixtureRecords(dataset::MixtureSpec spec, std::vector<std::unique_ptr<dataset::RecordSource>> leaves,
                               std::vector<std::string> names)
    : spec_(std::move(spec)), leaves_(std::move(leaves)), names_(std::move(names)) {
  for (const auto& l : leaves_) {
    first_.push_back(total_);
    total_ += l->size();
  }
}

std::size_t MixtureRecords::leaf_of(std::uint64_t id) const {
  return static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), id) - first_.begin()) - 1;
}

Status MixtureRecords::read(std::uint64_t id, std::string& out) const {
  const std::size_t l = leaf_of(id);
  return leaves_[l]->read(id - first_[l], out);
}

dataset::RecordOrigin MixtureRecords::origin(std::uint64_t id) const {
  const std::size_t l = leaf_of(id);
  return leaves_[l]->origin(id - first_[l]);
}

const dataset::MediaResolver& MixtureRecords::media(std::uint64_t id) const {
  const std::size_t l = leaf_of(id);
  return leaves_[l]->media(id - first_[l]);
}

void MixtureRecords::prefetch(std::span<const std::uint64_t> ids) const {
  dataset::prefetch_parts(ids, first_, leaves_);
}

std::vector<std::string> MixtureRecords::warnings() const {
  std::vector<std::string> w = spec_.warnings;
  for (const auto& l : leaves_) {
    std::vector<std::string> lw = l->warnings();
    w.insert(w.end(), lw.begin(), lw.end());
  }
  return w;
}

std::string MixtureRecords::identity() const {
  std::string out = "mixture " + spec_.hash_hex() + " " + std::string(dataset::mix_mode_name(spec_.mode)) + "\n";
  for (std::size_t i = 0; i < leaves_.size(); ++i) {
    const dataset::MixtureLeaf& leaf = spec_.leaves[i];
    char share[64];
    std::snprintf(share, sizeof share, "%.17g", spec_.mode == dataset::MixMode::kWeighted ? leaf.weight : leaf.repetitions);
    out += "leaf " + std::to_string(i) + " share=" + share + " split=" + leaf.split_part + "\n" + leaves_[i]->identity();
  }
  return out;
}

}  // namespace stoker::pipeline
