#include "stoker/dataset/record_source.h"

#include <algorithm>
#include <map>

namespace stoker::dataset {

ConcatSource::ConcatSource(std::vector<std::unique_ptr<RecordSource>> parts)
    : parts_(std::move(parts)) {
  for (const auto& p : parts_) {
    first_.push_back(total_);
    total_ += p->size();
  }
}

std::pair<const RecordSource*, std::uint64_t> ConcatSource::find(std::uint64_t id) const {
  STOKER_CHECK(id < total_, "record id out of range");
  // The last part whose first id is <= id: never an empty one (it shares its first id with
  // the part after it, which holds id).
  const std::size_t i =
      static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), id) - first_.begin()) - 1;
  return {parts_[i].get(), id - first_[i]};
}

Status ConcatSource::read(std::uint64_t id, std::string& out) const {
  auto [part, local] = find(id);
  return part->read(local, out);
}

RecordOrigin ConcatSource::origin(std::uint64_t id) const {
  auto [part, local] = find(id);
  return part->origin(local);
}

const MediaResolver& ConcatSource::media(std::uint64_t id) const {
  auto [part, local] = find(id);
  return part->media(local);
}

void prefetch_parts(std::span<const std::uint64_t> ids, std::span<const std::uint64_t> firsts,
                    std::span<const std::unique_ptr<RecordSource>> parts) {
  std::map<std::size_t, std::vector<std::uint64_t>> local;  // part → its ids, in order
  for (std::uint64_t id : ids) {
    // The last part whose first id is <= id (an empty part shares its first id with the next).
    const auto after = std::upper_bound(firsts.begin(), firsts.end(), id);
    if (after == firsts.begin()) continue;
    const auto p = static_cast<std::size_t>(after - firsts.begin()) - 1;
    if (id - firsts[p] < parts[p]->size()) local[p].push_back(id - firsts[p]);
  }
  for (const auto& [p, part_ids] : local) parts[p]->prefetch(part_ids);
}

void ConcatSource::prefetch(std::span<const std::uint64_t> ids) const {
  prefetch_parts(ids, first_, parts_);
}

std::vector<std::string> ConcatSource::warnings() const {
  std::vector<std::string> out;
  for (const auto& p : parts_) {
    std::vector<std::string> w = p->warnings();
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

std::string ConcatSource::identity() const {
  std::string out;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    out += "part " + std::to_string(i) + " records " + std::to_string(parts_[i]->size()) + "\n";
    out += parts_[i]->identity();
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace stoker::dataset
