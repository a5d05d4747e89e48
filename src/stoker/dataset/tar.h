// TarReader: the members of a tar archive read through a ByteSource — headers only; member data
// stays where it is (byte ranges of the shard). Formats: ustar (name + 155-byte prefix), GNU
// (././@LongLink 'L'/'K' headers, base-256 sizes), pax ('x'/'X' records: path, size; 'g' global
// headers accepted when they set neither). Every header's checksum is verified (the unsigned or
// the historic signed sum, as GNU tar and Python's tarfile accept).
// Offsets follow Python's tarfile exactly (Energon's `.tar.idx` is built from them): a member's
// `offset` is that of its first extended header ('L'/'K'/'x'; not 'g'), `data_offset` follows its
// own header, and the archive ends at the first all-zero block (or exactly at the end of the
// source). Unlike tarfile, a corrupt header in the middle is an error, never a silent end.
// One reader = one sequential pass, not thread-safe; reads go through a window of `chunk_bytes`
// (one pread / one ranged GET per window). Errors: DataLoss naming the source, the byte offset
// and the member (bad checksum, bad number, truncated header or data, malformed pax record),
// ResourceExhausted (an extended header over `max_extended_bytes`), Unimplemented (GNU sparse).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/byte_source.h"

namespace stoker::dataset {

inline constexpr std::int64_t kTarBlock = 512;

struct TarLimits {
  // A member larger than this fails its sample (wds.h); the reader itself only reports sizes.
  std::int64_t max_member_bytes = std::int64_t{2} << 30;
  // GNU long names and pax record blocks are read into memory: at most this many bytes each.
  std::int64_t max_extended_bytes = std::int64_t{1} << 20;
};

struct TarMember {
  std::string name;         // pax path > GNU long name > ustar prefix "/" name (outermost wins)
  char type = '0';          // typeflag; '\0' and '7' read as '0', a V7 "dir/" as '5'
  bool regular = false;     // a file (tarfile's isreg): its data is [data_offset, +size)
  std::int64_t offset = 0;       // tarfile's TarInfo.offset
  std::int64_t data_offset = 0;  // TarInfo.offset_data
  std::int64_t size = 0;
  std::int64_t end = 0;          // where the next header starts
};

class TarReader {
 public:
  // Reads headers from `start` (a header boundary) on. `source` must outlive the reader.
  explicit TarReader(const ByteSource& source, TarLimits limits = {}, std::int64_t start = 0,
                     std::int64_t chunk_bytes = std::int64_t{1} << 20);

  // Serve reads inside [offset, offset + bytes->size()) from memory (a sample read whole).
  void set_window(std::shared_ptr<const std::vector<std::uint8_t>> bytes, std::int64_t offset);

  // The next member; nullopt at the end of the archive. After an error the reader is done
  // (every later call returns the same error).
  Result<std::optional<TarMember>> next();

  // Where the next header is expected (after nullopt: the end of the last member's data, which
  // is tarfile's `TarFile.offset` at the end and the last entry of a `.tar.idx`).
  std::int64_t offset() const { return offset_; }
  const ByteSource& source() const { return source_; }
  // After an error: the damaged member's name when its header was readable (its data is not).
  const std::optional<std::string>& damaged_member() const { return damaged_member_; }

 private:
  Result<std::span<const std::uint8_t>> bytes_at(std::int64_t offset, std::int64_t n);
  Result<std::optional<TarMember>> read_member();
  Error fail(Error e);

  const ByteSource& source_;
  TarLimits limits_;
  std::int64_t offset_;
  std::int64_t chunk_;
  std::shared_ptr<const std::vector<std::uint8_t>> window_;
  std::int64_t window_offset_ = 0;
  std::optional<Error> error_;
  std::optional<std::string> damaged_member_;
};

// Python's tarfile `nti` restricted to what real archives hold: octal digits between optional
// spaces/NULs, or GNU base-256 (first byte 0x80; 0xff = negative is refused). nullopt = invalid.
std::optional<std::int64_t> parse_tar_number(std::span<const std::uint8_t> field);

// Whether a 512-byte header's checksum field matches its unsigned or signed byte sum.
bool tar_checksum_ok(std::span<const std::uint8_t> header);

}  // namespace stoker::dataset
