#include "stoker/dataset/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "stoker/base/option_name.h"
#include "stoker/dataset/jsonl_file.h"

namespace stoker::dataset {
namespace {

using PackedRecord = ManifestIndex::PackedRecord;
static_assert(sizeof(PackedRecord) == 16, "the cache payload is an array of 16-byte records");

// ---- small helpers -------------------------------------------------------------------------

// The stored length of a record of 4 GiB or more (see Scanner::emit).
constexpr std::uint32_t kTooLong = std::numeric_limits<std::uint32_t>::max();

std::string errno_text(int err) { return std::strerror(err); }

Error errno_error(int err, const std::string& what) {
  std::string msg = what + ": " + errno_text(err);
  switch (err) {
    case ENOENT: case ENOTDIR: return not_found(std::move(msg));
    case EACCES: case EPERM: case EROFS: return permission_denied(std::move(msg));
    default: return unavailable(std::move(msg));
  }
}

// Reads exactly `n` bytes at `offset` unless EOF comes first; returns bytes read or -errno.
std::int64_t pread_full(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done,
                        static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return static_cast<std::int64_t>(done);
}

bool write_full(int fd, const void* buf, std::size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = ::write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A fast non-cryptographic hash (4 independent lanes of multiply-rotate, then mixed): it guards
// against torn or corrupted caches, not against adversaries.
std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t lane[4] = {seed ^ 0x9e3779b97f4a7c15ULL, seed + 0xc2b2ae3d27d4eb4fULL,
                           seed ^ 0x165667b19e3779f9ULL, seed + 0x27d4eb2f165667c5ULL};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane[l] = std::rotl(lane[l] + w * 0xc2b2ae3d27d4eb4fULL, 31) * 0x9e3779b97f4a7c15ULL;
    }
  }
  std::uint64_t h = mix64(lane[0]) ^ std::rotl(mix64(lane[1]), 17) ^ std::rotl(mix64(lane[2]), 29) ^
                    std::rotl(mix64(lane[3]), 43);
  for (; i < n; ++i) h = mix64(h ^ p[i]) + i;
  return mix64(h ^ n);
}

// ---- the file's identity, which a cache must match ----------------------------------------

struct FileIdentity {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  std::uint64_t sample_hash = 0;  // first and last 4 KiB: catches same-size edits within one mtime tick
};

Result<FileIdentity> identify(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_error(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return invalid_argument(path + ": not a regular file");
  FileIdentity id;
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.inode = static_cast<std::uint64_t>(st.st_ino);
  constexpr std::size_t kSample = 4096;
  char buf[2 * kSample];
  const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(kSample, id.size));
  const std::size_t tail = static_cast<std::size_t>(std::min<std::uint64_t>(kSample, id.size - head));
  if (pread_full(fd, buf, head, 0) != static_cast<std::int64_t>(head) ||
      pread_full(fd, buf + head, tail, id.size - tail) != static_cast<std::int64_t>(tail)) {
    return unavailable(path + ": short read while sampling (file changing?)");
  }
  id.sample_hash = hash_bytes(buf, head + tail, id.size);
  return id;
}

bool same_file_state(const FileIdentity& a, const FileIdentity& b) {
  return a.size == b.size && a.mtime_ns == b.mtime_ns && a.inode == b.inode;
}

// ---- scan ----------------------------------------------------------------------------------

// JSON's insignificant whitespace; '\n' never occurs inside a line.
bool has_non_ws(const char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (c != ' ' && c != '\t' && c != '\r') return true;
  }
  return false;
}

struct ScanResult {
  std::vector<PackedRecord> records;
  std::uint64_t num_lines = 0;
};

class Scanner {
 public:
  Scanner(const std::string& path, std::vector<PackedRecord>& out) : path_(path), out_(out) {}

  // Line [start, end) ended by a '\n' at `end` (or EOF); `ends_cr` when byte end-1 is '\r'.
  Status emit(std::uint64_t start, std::uint64_t end, bool ends_cr, bool nonblank) {
    const std::uint64_t line = line_++;
    if (!nonblank) return ok_status();
    // A record of 4 GiB or more keeps the length kTooLong (it cannot be read: read_record
    // fails it alone, past any record cap), so one monstrous line never refuses the manifest.
    const std::uint64_t length =
        std::min<std::uint64_t>(end - start - (ends_cr ? 1 : 0), kTooLong);
    if (line > std::numeric_limits<std::uint32_t>::max()) {
      return invalid_argument(path_ + ": more than 2^32 lines; split the manifest");
    }
    out_.push_back({start, static_cast<std::uint32_t>(length), static_cast<std::uint32_t>(line)});
    return ok_status();
  }
  std::uint64_t lines_emitted() const { return line_ - 1; }

 private:
  const std::string& path_;
  std::vector<PackedRecord>& out_;
  std::uint64_t line_ = 1;
};

// One pass of large pread()s with memchr for '\n': the bytes are touched once, by the fastest
// loop libc has. State carried across chunks: where the current line started, whether it has a
// non-blank byte yet, and whether the previous chunk ended in '\r' (a CRLF split by the chunk).
Result<ScanResult> scan_file(int fd, const std::string& path, std::uint64_t size,
                             std::vector<char>& buf) {
  ScanResult result;
  Scanner scanner(path, result.records);
  std::uint64_t base = 0;
  char bom[3];
  if (pread_full(fd, bom, 3, 0) == 3 && std::memcmp(bom, "\xEF\xBB\xBF", 3) == 0) base = 3;
  std::uint64_t line_start = base;
  bool nonblank = false;
  bool prev_cr = false;
  for (;;) {
    const std::int64_t got = pread_full(fd, buf.data(), buf.size(), base);
    if (got < 0) return errno_error(static_cast<int>(-got), "reading " + path);
    if (got == 0) break;
    const auto n = static_cast<std::size_t>(got);
    const char* data = buf.data();
    std::size_t pos = 0;
    while (pos < n) {
      const auto* nl = static_cast<const char*>(std::memchr(data + pos, '\n', n - pos));
      const std::size_t end = nl != nullptr ? static_cast<std::size_t>(nl - data) : n;
      if (!nonblank) nonblank = has_non_ws(data + pos, end - pos);
      if (nl == nullptr) break;
      const bool ends_cr = end > 0 ? data[end - 1] == '\r' : prev_cr;
      STOKER_RETURN_IF_ERROR(scanner.emit(line_start, base + end, ends_cr, nonblank));
      line_start = base + end + 1;
      nonblank = false;
      pos = end + 1;
    }
    prev_cr = data[n - 1] == '\r';
    base += n;
    if (n < buf.size()) break;  // EOF inside this chunk
  }
  if (line_start < base) STOKER_RETURN_IF_ERROR(scanner.emit(line_start, base, prev_cr, nonblank));
  result.num_lines = scanner.lines_emitted();
  if (base != size) {
    return unavailable(path + ": changed while indexing (" + std::to_string(size) + " bytes at start, " +
                       std::to_string(base) + " read); retry when it is complete");
  }
  return result;
}

// ---- cache file ----------------------------------------------------------------------------
//
// v1, little-endian, 72-byte header then num_records x PackedRecord {u64 offset, u32 length,
// u32 line}:
//   0 magic "STKRIDX1"   8 u32 version   12 u32 record size (16)   16 u64 source size
//   24 i64 source mtime (ns)   32 u64 source inode   40 u64 source sample hash
//   48 u64 num_records   56 u64 num_lines   64 u64 checksum of bytes [0,64) and the payload

constexpr char kMagic[8] = {'S', 'T', 'K', 'R', 'I', 'D', 'X', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 72;
constexpr bool kCacheSupported = std::endian::native == std::endian::little;

struct Header {
  std::uint32_t version = kVersion;
  std::uint32_t record_size = sizeof(PackedRecord);
  FileIdentity source;
  std::uint64_t num_records = 0;
  std::uint64_t num_lines = 0;
  std::uint64_t checksum = 0;
};

template <typename T>
void put(unsigned char* at, T v) { std::memcpy(at, &v, sizeof(T)); }
template <typename T>
T get(const unsigned char* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  return v;
}

void encode_header(const Header& h, unsigned char* out) {
  std::memcpy(out, kMagic, 8);
  put(out + 8, h.version);
  put(out + 12, h.record_size);
  put(out + 16, h.source.size);
  put(out + 24, h.source.mtime_ns);
  put(out + 32, h.source.inode);
  put(out + 40, h.source.sample_hash);
  put(out + 48, h.num_records);
  put(out + 56, h.num_lines);
  put(out + 64, h.checksum);
}

std::uint64_t checksum(const unsigned char* header, const PackedRecord* records, std::size_t n) {
  return hash_bytes(records, n * sizeof(PackedRecord), hash_bytes(header, 64, 0x5354'4b52ULL));
}

enum class LoadOutcome { kOk, kMissing, kStale, kCorrupt };

// Every field is checked; a cache that is not exactly right is never used.
LoadOutcome load_cache(const std::string& cache_path, const FileIdentity& source,
                       ScanResult& out, std::string& why) {
  const int fd = ::open(cache_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return LoadOutcome::kMissing;
    why = "cannot open: " + errno_text(errno);
    return LoadOutcome::kCorrupt;
  }
  struct stat st {};
  unsigned char raw[kHeaderSize];
  auto fail = [&](std::string reason, LoadOutcome o = LoadOutcome::kCorrupt) {
    ::close(fd);
    why = std::move(reason);
    return o;
  };
  if (::fstat(fd, &st) != 0) return fail("cannot stat: " + errno_text(errno));
  if (pread_full(fd, raw, kHeaderSize, 0) != static_cast<std::int64_t>(kHeaderSize)) {
    return fail("shorter than its header");
  }
  if (std::memcmp(raw, kMagic, 8) != 0) return fail("bad magic");
  if (get<std::uint32_t>(raw + 8) != kVersion) {
    return fail("format version " + std::to_string(get<std::uint32_t>(raw + 8)), LoadOutcome::kStale);
  }
  if (get<std::uint32_t>(raw + 12) != sizeof(PackedRecord)) return fail("bad record size");
  FileIdentity cached{get<std::uint64_t>(raw + 16), get<std::int64_t>(raw + 24),
                      get<std::uint64_t>(raw + 32), get<std::uint64_t>(raw + 40)};
  if (!same_file_state(cached, source) || cached.sample_hash != source.sample_hash) {
    return fail("source changed", LoadOutcome::kStale);
  }
  const auto num_records = get<std::uint64_t>(raw + 48);
  const auto num_lines = get<std::uint64_t>(raw + 56);
  if (num_records > (static_cast<std::uint64_t>(st.st_size) - kHeaderSize) / sizeof(PackedRecord) ||
      kHeaderSize + num_records * sizeof(PackedRecord) != static_cast<std::uint64_t>(st.st_size)) {
    return fail("size does not match its record count");
  }
  std::vector<PackedRecord> records(num_records);
  const std::size_t bytes = num_records * sizeof(PackedRecord);
  if (pread_full(fd, records.data(), bytes, kHeaderSize) != static_cast<std::int64_t>(bytes)) {
    return fail("short read");
  }
  ::close(fd);
  if (checksum(raw, records.data(), records.size()) != get<std::uint64_t>(raw + 64)) {
    why = "checksum mismatch";
    return LoadOutcome::kCorrupt;
  }
  // Structure: records in file order, inside the file, on increasing lines.
  std::uint64_t min_offset = 0, min_line = 1;
  for (const PackedRecord& r : records) {
    if (r.offset < min_offset || r.offset + r.length > source.size || r.line < min_line ||
        r.line > num_lines) {
      why = "inconsistent records";
      return LoadOutcome::kCorrupt;
    }
    min_offset = r.offset + r.length + 1;
    min_line = std::uint64_t{r.line} + 1;
  }
  out.records = std::move(records);
  out.num_lines = num_lines;
  return LoadOutcome::kOk;
}

// Written to a unique temporary name and renamed into place, so readers see a whole file or
// none, and ranks indexing the same file at once do not trample each other.
Status write_cache(const std::string& cache_path, const FileIdentity& source, const ScanResult& scan) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = cache_path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, "creating " + tmp);
  Header h{.source = source, .num_records = scan.records.size(), .num_lines = scan.num_lines};
  unsigned char raw[kHeaderSize];
  encode_header(h, raw);
  h.checksum = checksum(raw, scan.records.data(), scan.records.size());
  encode_header(h, raw);
  const bool ok = write_full(fd, raw, kHeaderSize) &&
                  write_full(fd, scan.records.data(), scan.records.size() * sizeof(PackedRecord));
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    return errno_error(ok ? errno : write_errno, "writing " + tmp);
  }
  if (::rename(tmp.c_str(), cache_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return errno_error(err, "renaming to " + cache_path);
  }
  return ok_status();
}

std::string cache_path_for(const std::string& path, const ManifestOptions& options) {
  if (options.cache == IndexCacheMode::kOff || !kCacheSupported) return "";
  if (options.cache_dir.empty()) return path + ".stoker-index";
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  const std::string key = ec ? path : abs.string();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(hash_bytes(key.data(), key.size(), 0)));
  return (std::filesystem::path(options.cache_dir) /
          (std::filesystem::path(path).filename().string() + "-" + hex + ".stoker-index"))
      .string();
}

// Energon's `.jsonl.idx` beside the file, when there is one: the records from its offsets instead
// of a scan. Checked against the file before it is trusted — its size a multiple of 8 and at
// most 8 × (file size + 2), the offsets ascending from the first, the last = the file's size, and
// every record but the last ending with '\n', none blank (a pread of its last and first bytes
// per record, to trim its range's JSON whitespace like the scan) — a disagreeing
// index refuses the manifest at start naming the index and the reason (never a silent scan: the
// index says where records are, and a wrong one would shift every record after it). Records are
// one-based record numbers as their "line" (the index has no line numbers).
// Returns false when there is no index.
Result<bool> load_jsonl_idx(int fd, const ManifestFile& file, const FileIdentity& id, ScanResult& scan) {
  const std::string idx_path = jsonl_index_path(file.path);
  const int ifd = ::open(idx_path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (ifd < 0) {
    if (errno == ENOENT) return false;
    return errno_error(errno, "opening the .jsonl.idx " + idx_path);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{ifd};
  struct stat st {};
  if (::fstat(ifd, &st) != 0) return errno_error(errno, "stat " + idx_path);
  if (!S_ISREG(st.st_mode)) return invalid_argument(idx_path + ": the .jsonl.idx is not a regular file");
  const auto isize = static_cast<std::uint64_t>(st.st_size);
  if (isize > 8 * (id.size + 2)) {
    return invalid_argument(idx_path + ": the .jsonl.idx has " + std::to_string(isize) + " bytes, more entries than " +
                            file.path + " (" + std::to_string(id.size) + " bytes) can have records");
  }
  std::vector<std::uint8_t> bytes(isize);
  if (pread_full(ifd, bytes.data(), bytes.size(), 0) != static_cast<std::int64_t>(isize)) {
    return unavailable(idx_path + ": short read (file changing?)");
  }
  Result<std::vector<std::uint64_t>> offsets = decode_jsonl_index(bytes, id.size, idx_path);
  if (!offsets.ok()) {
    return std::move(offsets.error().with_context("the .jsonl.idx disagrees with " + file.path +
                                                  " (remove or rebuild it)"));
  }
  const std::vector<std::uint64_t>& o = *offsets;
  const std::size_t n = o.size() - 1;
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    return invalid_argument(idx_path + ": more than 2^32 records; split the manifest");
  }
  scan.records.clear();
  scan.records.reserve(n);
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  auto disagrees = [&](std::size_t i, const std::string& why) {
    return invalid_argument(idx_path + ": the .jsonl.idx disagrees with " + file.path + ": record " + std::to_string(i) +
                            " [" + std::to_string(o[i]) + ", " + std::to_string(o[i + 1]) + ") " + why +
                            " (remove or rebuild the index)");
  };
  char chunk[64];
  for (std::size_t i = 0; i < n; ++i) {
    // The record is its range with JSON whitespace trimmed at both ends (Energon's ranges keep
    // the blank lines after a record, and before the first): what the scan takes as the line.
    std::uint64_t lo = o[i], hi = o[i + 1];
    bool first_chunk = true;
    while (hi > lo) {
      const std::uint64_t from = std::max(lo, hi >= sizeof(chunk) ? hi - sizeof(chunk) : 0);
      const std::size_t k = static_cast<std::size_t>(hi - from);
      if (pread_full(fd, chunk, k, from) != static_cast<std::int64_t>(k)) {
        return unavailable(file.path + ": short read while checking its .jsonl.idx (file changing?)");
      }
      if (first_chunk && i + 1 < n && chunk[k - 1] != '\n') return disagrees(i, "does not end with a newline");
      first_chunk = false;
      std::size_t j = k;
      while (j > 0 && ws(chunk[j - 1])) --j;
      hi = from + j;
      if (j > 0) break;
    }
    if (hi == lo) return disagrees(i, "is blank");
    while (lo < hi) {
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof(chunk), hi - lo));
      if (pread_full(fd, chunk, k, lo) != static_cast<std::int64_t>(k)) {
        return unavailable(file.path + ": short read while checking its .jsonl.idx (file changing?)");
      }
      std::size_t j = 0;
      while (j < k && ws(chunk[j])) ++j;
      lo += j;
      if (j < k) break;
    }
    const std::uint64_t length = std::min<std::uint64_t>(hi - lo, kTooLong);
    scan.records.push_back({lo, static_cast<std::uint32_t>(length), static_cast<std::uint32_t>(i + 1)});
  }
  scan.num_lines = n;
  return true;
}

// Index one file into `file` / `scan`: from Energon's .jsonl.idx beside it, else from its cache
// when valid, else by scanning.
Status index_file(int fd, ManifestFile& file, const ManifestOptions& options,
                  std::vector<char>& buf, ScanResult& scan) {
  STOKER_ASSIGN_OR_RETURN(FileIdentity before, identify(fd, file.path));
  file.size_bytes = before.size;
  if (options.use_jsonl_idx) {
    STOKER_ASSIGN_OR_RETURN(bool indexed, load_jsonl_idx(fd, file, before, scan));
    if (indexed) {
      file.cache = CacheOutcome::kJsonlIdx;
      file.num_lines = scan.num_lines;
      return ok_status();
    }
  }
  file.cache_path = cache_path_for(file.path, options);
  file.cache = CacheOutcome::kBuilt;
  if (!file.cache_path.empty()) {
    std::string why;
    switch (load_cache(file.cache_path, before, scan, why)) {
      case LoadOutcome::kOk:
        file.cache = CacheOutcome::kLoaded;
        file.num_lines = scan.num_lines;
        return ok_status();
      case LoadOutcome::kMissing: break;
      case LoadOutcome::kStale: file.cache = CacheOutcome::kRebuiltStale; break;
      case LoadOutcome::kCorrupt:
        file.cache = CacheOutcome::kRebuiltCorrupt;
        file.cache_status = data_loss("index cache " + file.cache_path + " unusable (" + why + "); rebuilt");
        break;
    }
  }
  if (buf.empty()) buf.resize(options.scan_chunk_bytes);
  STOKER_ASSIGN_OR_RETURN(scan, scan_file(fd, file.path, before.size, buf));
  STOKER_ASSIGN_OR_RETURN(FileIdentity after, identify(fd, file.path));
  if (!same_file_state(before, after) || before.sample_hash != after.sample_hash) {
    return unavailable(file.path + ": changed while indexing; retry when it is complete");
  }
  file.num_lines = scan.num_lines;
  if (options.cache == IndexCacheMode::kReadWrite && !file.cache_path.empty()) {
    Status written = write_cache(file.cache_path, before, scan);
    file.cache_written = written.ok();
    if (!written.ok()) {
      file.cache_status = std::move(written).error().with_context(
          "index cache not saved, using an in-memory index");
    }
  }
  return ok_status();
}

}  // namespace

Status ManifestOptions::validate() const {
  if (max_record_bytes < 1) return invalid_argument("manifest: max_record_bytes must be >= 1");
  if (scan_chunk_bytes < 4096 || scan_chunk_bytes > (std::size_t{1} << 30)) {
    return invalid_argument("manifest: scan_chunk_bytes must be in [4 KiB, 1 GiB], got " +
                            std::to_string(scan_chunk_bytes));
  }
  return ok_status();
}

Result<std::unique_ptr<ManifestIndex>> ManifestIndex::open(const std::vector<std::string>& paths,
                                                           const ManifestOptions& options) {
  STOKER_RETURN_IF_ERROR(options.validate());
  if (paths.empty()) return invalid_argument("manifest: no files given");
  std::unique_ptr<ManifestIndex> index(new ManifestIndex());
  index->max_record_bytes_ = options.max_record_bytes;
  std::vector<char> buf;
  for (const std::string& path : paths) {
    // Non-blocking: a FIFO given as a manifest must not hang the open; the scan then refuses
    // anything that is not a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return errno_error(errno, "opening manifest " + path);
    index->fds_.push_back(fd);  // closed by ~ManifestIndex, also on the error paths below
    ManifestFile file;
    file.path = path;
    ScanResult scan;
    STOKER_RETURN_IF_ERROR(index_file(fd, file, options, buf, scan));
    if (index->files_.size() >= std::numeric_limits<std::uint32_t>::max()) {
      return invalid_argument("manifest: more than 2^32 files");
    }
    file.first_record = index->total_records_;
    file.num_records = scan.records.size();
    index->total_records_ += file.num_records;
    index->files_.push_back(std::move(file));
    index->records_.push_back(std::move(scan.records));
  }
  return index;
}

ManifestIndex::~ManifestIndex() {
  for (int fd : fds_) ::close(fd);
}

std::size_t ManifestIndex::file_of(std::uint64_t id) const {
  STOKER_CHECK(id < total_records_, "record id out of range");
  // Last file whose first_record <= id (empty files share a first_record with their successor).
  auto it = std::upper_bound(files_.begin(), files_.end(), id,
                             [](std::uint64_t v, const ManifestFile& f) { return v < f.first_record; });
  return static_cast<std::size_t>(it - files_.begin()) - 1;
}

RecordLocation ManifestIndex::location(std::uint64_t id) const {
  const std::size_t f = file_of(id);
  const PackedRecord& r = records_[f][id - files_[f].first_record];
  return RecordLocation{static_cast<std::uint32_t>(f), r.offset, r.length, r.line};
}

std::string ManifestIndex::describe(std::uint64_t id) const {
  const RecordLocation loc = location(id);
  return files_[loc.file].path + ":" + std::to_string(loc.line);
}

Status ManifestIndex::read_record(std::uint64_t id, std::string& out) const {
  if (id >= total_records_) {
    return invalid_argument("record " + std::to_string(id) + " out of range (manifest has " +
                            std::to_string(total_records_) + ")");
  }
  const RecordLocation loc = location(id);
  if (loc.length > max_record_bytes_ || loc.length == kTooLong) {
    out.clear();
    const std::string size = loc.length == kTooLong ? "at least 4 GiB"
                                                     : std::to_string(loc.length) + " bytes";
    return resource_exhausted(describe(id) + ": the record is " + size + ", over the " +
                              std::to_string(max_record_bytes_) +
                              "-byte record cap (" + option_name("max_record_bytes", "--max-record-bytes") +
                              ")");
  }
  out.resize(loc.length);
  const std::int64_t got = pread_full(fds_[loc.file], out.data(), loc.length, loc.offset);
  if (got < 0) return errno_error(static_cast<int>(-got), "reading " + describe(id));
  if (got != static_cast<std::int64_t>(loc.length)) {
    out.clear();
    return data_loss(describe(id) + ": record truncated (the file shrank since it was indexed)");
  }
  return ok_status();
}

Result<std::string> ManifestIndex::read_record(std::uint64_t id) const {
  std::string out;
  STOKER_RETURN_IF_ERROR(read_record(id, out));
  return out;
}

std::vector<std::string> ManifestIndex::warnings() const {
  std::vector<std::string> out;
  for (const ManifestFile& f : files_) {
    if (!f.cache_status.ok()) out.push_back(f.path + ": " + f.cache_status.error().to_string());
  }
  return out;
}

}  // namespace stoker::dataset
