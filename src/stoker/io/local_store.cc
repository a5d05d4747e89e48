// Local files: pread on the calling thread; the Future is complete when read() returns. Page-cache
// reads are fast and the engine already calls read() from its worker pool, so a thread hop would
// only add latency (io_uring is the upgrade path if cold local disks ever need many in flight).
//
// Every open is hostile-input safe: the path is opened with O_PATH (no device open, no FIFO
// wait), checked to be a regular file, and only then reopened for reading (O_NONBLOCK, through
// /proc/self/fd so it is the same inode); a restricted store opens it beneath one of its roots
// with openat2(RESOLVE_BENEATH), so neither ".." nor a symlink leads outside. The size cap is
// checked from fstat before a byte is read. errno is classed by what it means: a property of
// the path (ENOENT, EACCES, ELOOP, ENAMETOOLONG, ...) fails that object; only the machine's or
// the device's trouble (EIO, ENOMEM, EMFILE, ...) is Unavailable, the outage class.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "stoker/io/media_access.h"
#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

Error errno_error(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return not_found(msg);
    case EACCES:
    case EPERM:
      return permission_denied(msg);
    case EXDEV:  // openat2 RESOLVE_BENEATH: ".." or a symlink would leave the root
      return permission_denied(what + ": leads outside its media root through '..' or a symlink "
                                      "(trust boundary)");
    case ELOOP:
      return invalid_argument(what + ": too many levels of symbolic links (a symlink loop?)");
    case EIO:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case ESTALE:
    case ETIMEDOUT:
    case ENOLINK:
    case ECONNRESET:
    case EHOSTDOWN:
    case EHOSTUNREACH:
      return unavailable(msg);  // the disk, the mount or this machine, not the sample
    default:
      return invalid_argument(msg);  // ENAMETOOLONG, EISDIR, ENXIO, EINVAL, ...: this path
  }
}

template <typename T>
exec::Future<T> ready(Result<T> r) {
  auto [promise, future] = exec::make_promise_future<T>();
  promise.set(std::move(r));
  return std::move(future);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string describe_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

struct Root {
  MediaRoot where;
  Fd fd;  // O_PATH | O_DIRECTORY
};

class LocalStore final : public ObjectStore {
 public:
  static Result<std::unique_ptr<ObjectStore>> create(const LocalAccess& access) {
    auto store = std::unique_ptr<LocalStore>(new LocalStore());
    store->restricted_ = access.restricted;
    for (const std::string& r : access.roots) {
      STOKER_ASSIGN_OR_RETURN(MediaRoot where, make_media_root(r));
      Fd fd(::open(where.real.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (fd.get() < 0) return errno_error(errno, "media root " + where.path);
      store->roots_.push_back({std::move(where), std::move(fd)});
      store->views_.push_back(store->roots_.back().where);
    }
    return std::unique_ptr<ObjectStore>(std::move(store));
  }

  exec::Future<Bytes> read(const std::string& uri, ReadOptions options) override {
    return ready(read_now(uri, options));
  }

  exec::Future<ObjectInfo> head(const std::string& uri) override { return ready(head_now(uri)); }

  exec::Future<void> write(const std::string& uri, Bytes data) override {
    auto [promise, future] = exec::make_promise_future<void>();
    promise.set(write_now(uri, data));
    return std::move(future);
  }

 private:
  LocalStore() = default;

  static Result<std::string> local_path(const std::string& uri) {
    STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
    if (u.scheme != Scheme::kFile) return unimplemented("not a local file: " + shown_uri(uri));
    return u.path;
  }

  // `path` opened with `flags`, beneath its root when restricted (the final symlink is
  // followed, within the root). With O_PATH no device is opened and no FIFO waited for.
  Result<Fd> open_at(const std::string& path, int flags) const {
    if (!restricted_) {
      Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
      if (fd.get() < 0) return errno_error(errno, "open " + shown_uri(path));
      return fd;
    }
    const std::string abs = fold_dots(path);
    std::string rel;
    const MediaRoot* where = abs.empty() || abs[0] != '/' ? nullptr : find_root(views_, abs, &rel);
    if (where == nullptr) {
      return permission_denied("open " + shown_uri(path) + ": outside every media root (trust boundary)");
    }
    const Root& root = roots_[static_cast<std::size_t>(where - views_.data())];
    if (rel.empty()) rel = ".";
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, root.fd.get(), rel.c_str(), &how, sizeof how);
    if (fd >= 0) return Fd(static_cast<int>(fd));
    if (errno != ENOSYS && errno != EXDEV) return errno_error(errno, "open " + shown_uri(path));
    // RESOLVE_BENEATH refuses every absolute symlink, also one that points back inside the root
    // (datasets have those); kernels before 5.6 have no openat2. Both: check the real path
    // against the root. (A symlink swapped by someone writing the dataset folder between the
    // check and the open could still escape; the threat here is hostile data, not a concurrent
    // local attacker — documented in the io README.)
    char real[PATH_MAX];
    if (::realpath(abs.c_str(), real) == nullptr) return errno_error(errno, "open " + shown_uri(path));
    // Any of the store's roots: a symlink in the dataset folder into another allowed folder is
    // fine; one into a folder nobody allowed is not.
    std::string ignored;
    if (find_root(views_, real, &ignored) == nullptr) return errno_error(EXDEV, "open " + shown_uri(path));
    Fd plain(::open(real, flags | O_CLOEXEC | O_NOFOLLOW));
    if (plain.get() < 0) return errno_error(errno, "open " + shown_uri(path));
    return plain;
  }

  // A readable descriptor of a regular file, with its stat.
  Result<Fd> open_regular(const std::string& path, struct stat* st) const {
    STOKER_ASSIGN_OR_RETURN(Fd opath, open_at(path, O_PATH));
    if (::fstat(opath.get(), st) != 0) return errno_error(errno, "stat " + shown_uri(path));
    if (!S_ISREG(st->st_mode)) {
      return invalid_argument(shown_uri(path) + " is " + describe_type(st->st_mode) +
                              ": media must be regular files");
    }
    // Reopen the very inode for reading. /proc may be missing (some sandboxes): then open the
    // path again (non-blocking, so even a swapped-in FIFO cannot hang us) and make sure it is
    // still the same file.
    constexpr int kRead = O_RDONLY | O_NONBLOCK | O_NOCTTY;
    const std::string self = "/proc/self/fd/" + std::to_string(opath.get());
    Fd fd(::open(self.c_str(), kRead | O_CLOEXEC));
    if (fd.get() < 0 && errno == ENOENT) {
      STOKER_ASSIGN_OR_RETURN(fd, open_at(path, kRead));
    }
    if (fd.get() < 0) return errno_error(errno, "open " + shown_uri(path));
    struct stat again {};
    if (::fstat(fd.get(), &again) != 0 || again.st_ino != st->st_ino || again.st_dev != st->st_dev) {
      return data_loss("open " + shown_uri(path) + ": the file was replaced while it was opened");
    }
    return fd;
  }

  Result<ObjectInfo> head_now(const std::string& uri) const {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    STOKER_ASSIGN_OR_RETURN(Fd fd, open_at(path, O_PATH));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error(errno, "stat " + shown_uri(path));
    if (!S_ISREG(st.st_mode)) {
      return invalid_argument(shown_uri(path) + " is " + describe_type(st.st_mode) + ", not a regular file");
    }
    return ObjectInfo{static_cast<std::int64_t>(st.st_size), etag_of(st)};
  }

  static std::string etag_of(const struct stat& st) {
    const long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                               st.st_mtim.tv_nsec;
    return std::to_string(mtime_ns) + "-" + std::to_string(st.st_size);
  }

  Result<Bytes> read_now(const std::string& uri, const ReadOptions& options) const {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    struct stat st {};
    STOKER_ASSIGN_OR_RETURN(Fd fd, open_regular(path, &st));
    if (!options.if_match.empty() && etag_of(st) != options.if_match) {
      return failed_precondition(shown_uri(path) + " changed (ETag " + etag_of(st) + ", expected " +
                                 options.if_match + ")");
    }
    const std::int64_t size = st.st_size;
    if (options.offset < 0 || options.offset > size ||
        (options.offset == size && size > 0 && options.length != 0)) {
      return invalid_argument(shown_uri(path) + ": range starts at " + std::to_string(options.offset) +
                              ", past the end (" + std::to_string(size) + " bytes)");
    }
    std::int64_t want = size - options.offset;
    if (options.length >= 0) want = std::min(want, options.length);
    if (options.max_bytes >= 0 && want > options.max_bytes) {
      return resource_exhausted(shown_uri(path) + " is " + std::to_string(want) + " bytes, over the " +
                                std::to_string(options.max_bytes) + "-byte object cap");
    }
    Bytes out(static_cast<std::size_t>(want));
    std::int64_t done = 0;
    while (done < want) {
      ssize_t n = ::pread(fd.get(), out.data() + done, static_cast<std::size_t>(want - done),
                          options.offset + done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_error(errno, "read " + shown_uri(path));
      if (n == 0) return data_loss(shown_uri(path) + ": file shrank while reading");
      done += n;
    }
    return out;
  }

  static Status write_now(const std::string& uri, const Bytes& data) {
    STOKER_ASSIGN_OR_RETURN(std::string path, local_path(uri));
    const std::string tmp = path + ".tmp";
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return errno_error(errno, "create " + tmp);
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return errno_error(errno, "write " + tmp);
      done += static_cast<std::size_t>(n);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) return errno_error(errno, "rename " + shown_uri(tmp));
    return ok_status();
  }

  bool restricted_ = false;
  std::vector<Root> roots_;
  std::vector<MediaRoot> views_;  // roots_[i].where, contiguous for find_root
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> make_local_store(const LocalAccess& access) {
  return LocalStore::create(access);
}

}  // namespace stoker::io
