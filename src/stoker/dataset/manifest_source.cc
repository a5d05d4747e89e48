#include "stoker/dataset/manifest_source.h"

#include <climits>
#include <cstdlib>

#include "stoker/io/uri.h"

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

std::string ManifestSource::identity() const {
  std::string out;
  const std::vector<ManifestFile>& files = index_->files();
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ManifestFile& f = files[i];
    std::string where;
    if (io::is_remote_uri(names_[i])) {
      where = "remote " + names_[i] + " copy " + f.path.substr(f.path.rfind('/') + 1);
    } else {
      char buf[PATH_MAX];
      where = "local " + std::string(::realpath(f.path.c_str(), buf) != nullptr ? buf : f.path.c_str());
    }
    out += where + " bytes " + std::to_string(f.size_bytes) + " records " +
           std::to_string(f.num_records) + "\n";
  }
  return out;
}

}  // namespace stoker::dataset
