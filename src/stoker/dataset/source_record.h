// SourceRecord: one record as a record source hands it to the engine — the record's JSON text
// (any form dataset::parse_record reads), where it came from (for every error message), and the
// media-resolution context: the media references of that JSON which name bytes inside the data
// itself (a tar member, an image inside a pickled list) mapped to byte ranges of their object, so
// they are read by range (pread / ranged GET), never copied to temporary files. Any other media
// reference is a path or URI the engine resolves against `base` through its trust boundary.
// Plain values; thread-safe to read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker::dataset {

struct ByteRange {
  std::string object;       // the shard's path or URI
  std::int64_t offset = 0;
  std::int64_t length = 0;
};

struct SourceRecord {
  std::string text;        // the record's JSON
  std::string location;    // "shards/train-003.tar: sample 17 (key 'abc')"
  std::string base;        // folder other media paths resolve against (the shard's folder)
  std::vector<std::pair<std::string, ByteRange>> media;  // reference -> bytes
  std::string subflavors;  // JSON object passed through from the mixture/dataset, or empty
  // The sample's bytes when it was read whole ([bytes_offset, + size) of the object named by the
  // media ranges): a reader may serve those ranges from here instead of reading them again.
  std::shared_ptr<const std::vector<std::uint8_t>> bytes;
  std::int64_t bytes_offset = 0;

  const ByteRange* find_media(std::string_view reference) const {
    for (const auto& [ref, range] : media)
      if (ref == reference) return &range;
    return nullptr;
  }
};

}  // namespace stoker::dataset
