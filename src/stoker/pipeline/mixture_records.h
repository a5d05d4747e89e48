// A mixture spec as a data argument (issue 23): Energon's MetadatasetV2 YAML (`.yaml` / `.yml`)
// or the JSON form (`.json` whose first byte is '['), dataset/mixture.h. Its leaves — JSONL
// (plain, .gz, .zst), WebDataset shard lists (a leaf path that names .tar shards) and Energon
// folders (their split part) — are opened as the engine's record sources, and their records
// chained (ids of leaf 0 first); the Loader reads the leaves' sizes and shares from here and
// builds the global plan (dataset/plan.h), which is then the only source of order.
// A mixture must be the only data argument. Media of every leaf resolve in that leaf's own
// scope; the store may read beneath every leaf's roots. Thread-safe once opened.
// Errors at open: the spec's (file:line:col), each leaf's (named with the spec's file:line:col).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/dataset/mixture.h"
#include "stoker/dataset/record_source.h"
#include "stoker/pipeline/store_fetcher.h"

namespace stoker::pipeline {

const RecordSourceKind* mixture_record_source_kind();
bool is_mixture_spec(std::string_view spec);

class MixtureRecords final : public dataset::RecordSource {
 public:
  MixtureRecords(dataset::MixtureSpec spec, std::vector<std::unique_ptr<dataset::RecordSource>> leaves,
                 std::vector<std::string> names);
  std::uint64_t size() const override { return total_; }
  Status read(std::uint64_t id, std::string& out) const override;
  dataset::RecordOrigin origin(std::uint64_t id) const override;
  const dataset::MediaResolver& media(std::uint64_t id) const override;
  void prefetch(std::span<const std::uint64_t> ids) const override;  // each leaf its own ids
  std::vector<std::string> warnings() const override;
  // "mixture <hash> <mode>" then each leaf's share and identity.
  std::string identity() const override;

  const dataset::MixtureSpec& spec() const { return spec_; }
  std::size_t leaves() const { return leaves_.size(); }
  std::uint64_t leaf_size(std::size_t i) const { return leaves_[i]->size(); }
  std::uint64_t first_id(std::size_t i) const { return first_[i]; }
  // The leaf's path as the spec resolved it (for summaries).
  const std::string& leaf_name(std::size_t i) const { return names_[i]; }
  // The leaf holding global id `id`.
  std::size_t leaf_of(std::uint64_t id) const;

 private:
  dataset::MixtureSpec spec_;
  std::vector<std::unique_ptr<dataset::RecordSource>> leaves_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> first_;
  std::uint64_t total_ = 0;
};

}  // namespace stoker::pipeline
