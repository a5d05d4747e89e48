#include "stoker/dataset/manifest_source.h"

namespace stoker::dataset {

ManifestSource::ManifestSource(std::unique_ptr<ManifestIndex> index,
                               std::vector<std::string> names, std::vector<io::MediaScope> scopes)
    : index_(std::move(index)), names_(std::move(names)) {
  STOKER_CHECK(names_.size() == index_->files().size() && scopes.size() == names_.size(),
               "manifest source: one name and one scope per file");
  scopes_.reserve(scopes.size());
  for (io::MediaScope& s : scopes) scopes_.emplace_back(std::move(s));
}

RecordOrigin ManifestSource::origin(std::uint64_t id) const {
  const RecordLocation loc = index_->location(id);
  return {names_[loc.file], loc.line};
}

const MediaResolver& ManifestSource::media(std::uint64_t id) const {
  return scopes_[index_->location(id).file];
}

}  // namespace stoker::dataset
