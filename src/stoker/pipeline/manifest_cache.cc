#include "stoker/pipeline/manifest_cache.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

#include "stoker/base/hash.h"
#include "stoker/base/sha256.h"
#include "stoker/io/private_dir.h"

namespace stoker::pipeline {
namespace {

// One file per version of the object: URI + ETag + size.
std::string copy_name(const std::string& uri, const io::ObjectInfo& version) {
  std::string base = uri.substr(uri.rfind('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (base.size() > 120) base.resize(120);
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a64(uri + "\n" + version.etag + "\n" + std::to_string(version.size))));
  return base + "-" + key + ".jsonl";
}

std::string sidecar_text(const std::string& digest, const io::ObjectInfo& version) {
  std::string etag = version.etag;
  for (char& c : etag) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return "sha256 " + digest + "\nsize " + std::to_string(version.size) + "\netag " + etag +
         "\n";
}

// SHA-256 of an open file, read to its end; -1 size on a read error.
std::pair<std::string, std::int64_t> hash_fd(int fd) {
  Sha256 h;
  std::vector<char> buf(std::size_t{1} << 20);
  std::int64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return {"", -1};
    if (n == 0) break;
    h.update(buf.data(), static_cast<std::size_t>(n));
    total += n;
  }
  return {h.finish_hex(), total};
}

// True when `name` is a copy of exactly `version`: the sidecar written at download names this
// ETag and size, and the bytes hash to its digest. Anything else (missing, planted, truncated,
// altered) is not a copy: the caller downloads again.
bool verified_copy(const io::PrivateDir& dir, const std::string& name,
                   const io::ObjectInfo& version) {
  Result<std::string> sidecar = dir.read_small(name + ".sha256", 4096);
  if (!sidecar.ok()) return false;
  std::istringstream in(*sidecar);
  std::string key, digest;
  if (!(in >> key >> digest) || key != "sha256" || digest.size() != 64) return false;
  if (*sidecar != sidecar_text(digest, version)) return false;  // other ETag or size
  Result<int> fd = dir.open_file(name);
  if (!fd.ok()) return false;
  auto [actual, size] = hash_fd(*fd);
  ::close(*fd);
  return size == version.size && actual == digest;
}

std::string mib(std::int64_t b) {
  if (b < (std::int64_t{1} << 20)) return std::to_string(b) + " bytes";
  return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

Result<std::string> cache_remote_manifest(io::ObjectStore& store, const std::string& uri,
                                          const std::string& cache_dir,
                                          const ManifestCacheOptions& options) {
  Result<io::ObjectInfo> info = io::head_sync(store, uri);
  if (!info.ok()) return std::move(info.error().with_context("manifest " + uri));
  const std::int64_t cap = options.max_bytes;
  auto over_cap = [&](std::int64_t size) {
    return resource_exhausted("manifest " + uri + " is " + std::to_string(size) +
                              " bytes, over the manifest cap of " + std::to_string(cap) +
                              " bytes (--max-manifest-bytes / max_manifest_bytes)");
  };
  if (info->size > cap) return over_cap(info->size);
  STOKER_ASSIGN_OR_RETURN(io::PrivateDir dir, io::PrivateDir::open(cache_dir));
  if (verified_copy(dir, copy_name(uri, *info), *info)) {
    STOKER_RETURN_IF_ERROR(dir.verify());
    return dir.path() + "/" + copy_name(uri, *info);
  }
  STOKER_ASSIGN_OR_RETURN(std::int64_t free, dir.free_bytes());
  if (free < info->size + kCacheFreeReserveBytes) {
    return resource_exhausted("manifest " + uri + " (" + mib(info->size) + ") does not fit in the cache " +
                              dir.path() + ": " + mib(free) + " free, " +
                              mib(info->size + kCacheFreeReserveBytes) +
                              " needed (the copy + 64 MiB kept free); put the cache elsewhere "
                              "(--cache-dir / cache_dir / $STOKER_CACHE_DIR)");
  }
  STOKER_ASSIGN_OR_RETURN(io::PrivateDir::Temp tmp, dir.create_temp(copy_name(uri, *info)));
  Sha256 digest;
  io::ObjectInfo streamed;
  Status st = io::stream_object(
      store, uri, std::max<std::int64_t>(1, options.chunk_bytes),
      [&](std::span<const std::uint8_t> chunk, std::int64_t offset) -> Status {
        // The object was replaced mid-stream: stream_object starts over with the new version.
        if (offset == 0) {
          if (::ftruncate(tmp.fd, 0) != 0 || ::lseek(tmp.fd, 0, SEEK_SET) != 0) {
            return unavailable("rewinding manifest cache " + dir.path() + "/" + tmp.name);
          }
          digest.reset();
        }
        if (offset + static_cast<std::int64_t>(chunk.size()) > cap) return over_cap(offset + chunk.size());
        std::size_t done = 0;
        while (done < chunk.size()) {
          const ssize_t n = ::write(tmp.fd, chunk.data() + done, chunk.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            std::string what = "writing manifest cache " + dir.path() + "/" + tmp.name + ": " +
                               std::strerror(err);
            return err == ENOSPC || err == EDQUOT ? resource_exhausted(what) : unavailable(what);
          }
          done += static_cast<std::size_t>(n);
        }
        digest.update(chunk.data(), chunk.size());
        return ok_status();
      },
      &streamed);
  if (!st.ok()) {
    dir.discard(tmp);
    Error e = st.error();
    return std::move(e.with_context("caching manifest " + uri));
  }
  // Named by the version actually copied: an object replaced between the HEAD above and the
  // stream's own is the newer version, whole. The sidecar lands after the copy: a crash between
  // the two leaves a copy without a digest, which is never used.
  const std::string name = copy_name(uri, streamed);
  STOKER_RETURN_IF_ERROR(dir.commit(tmp, name));
  STOKER_RETURN_IF_ERROR(dir.write_atomic(name + ".sha256", sidecar_text(digest.finish_hex(), streamed)));
  STOKER_RETURN_IF_ERROR(dir.verify());
  return dir.path() + "/" + name;
}

}  // namespace stoker::pipeline
