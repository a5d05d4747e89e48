// ByteSource: random access to the bytes of one object — a tar shard, an index file — wherever
// it lives. The tar reader (tar.h) and the shard layer (wds.h) read only through it, so a local
// file (pread), an S3/HTTP object (ranged GETs through a callback that io/ObjectStore serves) and
// an in-memory buffer (tests, fuzzing) are the same to them. The size is known when the source
// is made (stat / HEAD), so a read past the end is refused before any I/O.
// Thread-safe: read_at may be called from any thread at once (pread; the callback must be too).
// Errors: read_at past size() is DataLoss ("truncated"); others are the backend's (NotFound,
// PermissionDenied, Unavailable...), with the source's name as context.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The path or URI, for error messages.
  virtual const std::string& name() const = 0;
  virtual std::int64_t size() const = 0;
  // Fills `out` with the bytes [offset, offset + out.size()). All of them or an error.
  virtual Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const = 0;
  // A hint: [offset, offset + length) will be read soon, by one or more read_at calls inside it.
  // A remote source may start one ranged GET for it now (pipeline/shard_records.cc); read_at
  // then waits for it instead of issuing its own. Never changes what read_at returns. Default:
  // nothing (a pread is cheap).
  virtual void prefetch(std::int64_t offset, std::int64_t length) const {
    (void)offset;
    (void)length;
  }
};

// A local file, opened once (O_RDONLY | O_CLOEXEC), read with pread. NotFound, PermissionDenied,
// InvalidArgument (not a regular file).
Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path);

// A remote object: `read(offset, out)` must fill `out` with [offset, offset + out.size()) — one
// ranged GET (io::ObjectStore::read with ReadOptions{offset, length, if_match = the ETag seen at
// HEAD}, so a replaced object fails instead of mixing versions). `size` from the HEAD.
using RangeReader = std::function<Status(std::int64_t offset, std::span<std::uint8_t> out)>;
std::unique_ptr<ByteSource> make_range_source(std::string name, std::int64_t size, RangeReader read);

// Bytes in memory (tests, fuzz targets, a shard already fetched whole).
std::unique_ptr<ByteSource> make_memory_source(std::string name, std::vector<std::uint8_t> bytes);

// Reads [offset, offset + length) into a new buffer (length checked against size() first).
Result<std::vector<std::uint8_t>> read_range(const ByteSource& source, std::int64_t offset,
                                             std::int64_t length);

}  // namespace stoker::dataset
