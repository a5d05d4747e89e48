// ManifestSource: the JSONL manifests as a RecordSource (record_source.h) — records from a
// ManifestIndex (one or many local files, a remote manifest's cached copy among them), each
// file with the name errors give it (the path or URI as the user wrote it, secrets redacted)
// and the io::MediaScope its media references resolve in (the trust boundary,
// io/media_access.h). Immutable; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stoker/dataset/manifest.h"
#include "stoker/dataset/record_source.h"
#include "stoker/io/media_access.h"

namespace stoker::dataset {

class ManifestSource final : public RecordSource {
 public:
  // One name and one scope per file of `index`, in its order.
  ManifestSource(std::unique_ptr<ManifestIndex> index, std::vector<std::string> names,
                 std::vector<io::MediaScope> scopes);
  std::uint64_t size() const override { return index_->size(); }
  Status read(std::uint64_t id, std::string& out) const override {
    return index_->read_record(id, out);
  }
  RecordOrigin origin(std::uint64_t id) const override;
  const MediaResolver& media(std::uint64_t id) const override;
  std::vector<std::string> warnings() const override { return index_->warnings(); }
  // Per file: a local manifest's canonical path, a remote one's URI and its cached copy's name
  // (which names the version: URI + ETag + size, pipeline/manifest_cache.h); bytes and records.
  std::string identity() const override;
  const ManifestIndex& index() const { return *index_; }

 private:
  struct Scope final : MediaResolver {
    explicit Scope(io::MediaScope s) : scope(std::move(s)) {}
    Result<std::string> resolve(std::string_view ref) const override { return scope.resolve(ref); }
    io::MediaScope scope;
  };
  std::unique_ptr<ManifestIndex> index_;
  std::vector<std::string> names_;
  std::vector<Scope> scopes_;
};

}  // namespace stoker::dataset
