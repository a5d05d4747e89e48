// Local files: pread on the calling thread; the Future is complete when read() returns. Page-cache
// reads are fast and the engine already calls read() from its worker pool, so a thread hop would
// only add latency (io_uring is the upgrade path if cold local disks ever need many in flight).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

Error errno_error(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return not_found(msg);
  if (err == EACCES || err == EPERM) return permission_denied(msg);
  if (err == EISDIR) return invalid_argument(msg);
  return unavailable(msg);
}

template <typename T>
exec::Future<T> ready(Result<T> r) {
  auto [promise, future] = exec::make_promise_future<T>();
  promise.set(std::move(r));
  return std::move(future);
}

Result<std::string> local_path(const std::string& uri) {
  STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
  if (u.scheme != Scheme::kFile) return unimplemented("not a local file: " + uri);
  return u.path;
}

class LocalStore final : public ObjectStore {
 public:
  exec::Future<Bytes> read(const std::string& uri, ByteRange range) override {
    return ready(read_now(uri, range));
  }

  exec::Future<ObjectInfo> head(const std::string& uri) override {
    return ready(head_now(uri));
  }

  exec::Future<void> write(const std::string& uri, Bytes data) override {
    auto [promise, future] = exec::make_promise_future<void>();
    promise.set(write_now(uri, data));
    return std::move(future);
  }

 private:
  static Result<ObjectInfo> head_now(const std::string& uri) {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno_error(errno, "stat " + path);
    if (S_ISDIR(st.st_mode)) return invalid_argument(path + " is a directory");
    const long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                               st.st_mtim.tv_nsec;
    return ObjectInfo{static_cast<std::int64_t>(st.st_size),
                      std::to_string(mtime_ns) + "-" + std::to_string(st.st_size)};
  }

  static Result<Bytes> read_now(const std::string& uri, ByteRange range) {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_error(errno, "open " + path);
    struct stat st;
    if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
      ::close(fd);
      return invalid_argument(path + " is not a readable file");
    }
    const std::int64_t size = st.st_size;
    if (range.offset < 0 || (range.offset > size) || (range.offset == size && size > 0 && range.length != 0)) {
      ::close(fd);
      return invalid_argument(path + ": range starts at " + std::to_string(range.offset) +
                              ", past the end (" + std::to_string(size) + " bytes)");
    }
    std::int64_t want = size - range.offset;
    if (range.length >= 0) want = std::min(want, range.length);
    Bytes out(static_cast<std::size_t>(want));
    std::int64_t done = 0;
    while (done < want) {
      ssize_t n = ::pread(fd, out.data() + done, static_cast<std::size_t>(want - done),
                          range.offset + done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        if (n == 0) return data_loss(path + ": file shrank while reading");
        return errno_error(err, "read " + path);
      }
      done += n;
    }
    ::close(fd);
    return out;
  }

  static Status write_now(const std::string& uri, const Bytes& data) {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errno_error(errno, "create " + tmp);
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        return errno_error(err, "write " + tmp);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return errno_error(errno, "rename " + tmp);
    return ok_status();
  }
};

}  // namespace

std::unique_ptr<ObjectStore> make_local_store() { return std::make_unique<LocalStore>(); }

}  // namespace stoker::io
