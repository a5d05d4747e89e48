#include "stoker/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "stoker/base/option_name.h"
#include "stoker/base/printable.h"

namespace stoker {
namespace {

Error errno_error(const std::string& step, const std::string& path, int err) {
  std::string msg = step + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG: return resource_exhausted(msg);
    case EACCES:
    case EPERM:
    case EROFS: return permission_denied(msg);
    case ENOENT:
    case ENOTDIR: return not_found(msg);
    default: return data_loss(msg);
  }
}

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

const char* type_name(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISREG(m)) return "a regular file";
  return "not a regular file";
}

Status write_all(int fd, const char* p, std::size_t n, const std::string& tmp) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error("writing", tmp, errno);
    }
    if (w == 0) return errno_error("writing", tmp, ENOSPC);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return ok_status();
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view bytes,
                         const AtomicWriteOptions& options) {
  if (path.empty()) return invalid_argument("writing a file: empty path");
  const std::string tmp = path + ".tmp";
  // O_NONBLOCK: a FIFO planted at the temporary's name fails the open (ENXIO) instead of
  // blocking it; on a regular file it changes nothing.
  Fd fd(::open(tmp.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644));
  if (fd.get() < 0) return errno_error("creating", tmp, errno);
  auto fail = [&](Error e) -> Status {
    fd.reset();
    ::unlink(tmp.c_str());
    return e;
  };
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(errno_error("fstat", tmp, errno));
  if (!S_ISREG(st.st_mode)) {  // e.g. a FIFO planted at the temporary's name
    return fail(invalid_argument("creating " + tmp + ": " + type_name(st.st_mode) +
                                 " is in the way"));
  }
  const std::size_t half = bytes.size() / 2;
  if (Status s = write_all(fd.get(), bytes.data(), half, tmp); !s.ok()) return fail(s.error());
  if (options.midway != nullptr) options.midway(options.midway_arg);
  if (Status s = write_all(fd.get(), bytes.data() + half, bytes.size() - half, tmp); !s.ok()) {
    return fail(s.error());
  }
  if (::fsync(fd.get()) != 0) return fail(errno_error("fsync", tmp, errno));
  if (::close(fd.release()) != 0) return fail(errno_error("closing", tmp, errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return errno_error("renaming " + tmp + " to", path, err);
  }
  // The rename is durable once the folder is: fsync it (some file systems refuse; ignore EINVAL).
  const std::string dir = folder_of(path);
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0) return errno_error("opening the folder", dir, errno);
  if (::fsync(dfd.get()) != 0 && errno != EINVAL && errno != EROFS) {
    return errno_error("fsync of the folder", dir, errno);
  }
  return ok_status();
}

Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes) {
  if (path.empty()) return invalid_argument("reading a file: empty path");
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) return errno_error("opening", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("fstat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return invalid_argument(path + " is " + type_name(st.st_mode) + ", not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return resource_exhausted(path + " is " + std::to_string(st.st_size) + " bytes, over the " +
                              std::to_string(max_bytes) + "-byte limit");
  }
  // Regular file: O_NONBLOCK has no effect on reads; read at most max_bytes + 1.
  std::string out(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (got > max_bytes) break;
      out.resize(std::min(out.size() * 2 + 64, max_bytes + 1));
    }
    const ssize_t r = ::read(fd.get(), out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error("reading", path, errno);
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  if (got > max_bytes) {
    return resource_exhausted(path + " grew past the " + std::to_string(max_bytes) +
                              "-byte limit while being read");
  }
  out.resize(got);
  return out;
}

Status probe_writable(const std::string& path, bool folder) {
  if (path.empty()) return invalid_argument("an empty path");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return errno_error("checking", path, errno);
  if (folder) {
    std::string dir = path;
    if (!exists) {
      // It will be created: its parent must exist (then the probe runs there).
      dir = folder_of(path);
      struct stat pst {};
      if (::stat(dir.c_str(), &pst) != 0) return errno_error("checking the folder", dir, errno);
      if (!S_ISDIR(pst.st_mode)) {
        return invalid_argument("the folder " + dir + " of " + path + " is " +
                                type_name(pst.st_mode));
      }
    } else if (!S_ISDIR(st.st_mode)) {
      return invalid_argument(path + " is " + type_name(st.st_mode) + ", not a folder");
    }
    static std::atomic<unsigned> counter{0};
    const std::string probe = dir + "/.stoker-probe-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++);
    Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) return errno_error("creating a file in", dir, errno);
    fd.reset();
    ::unlink(probe.c_str());
    return ok_status();
  }
  if (exists) {
    if (S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
        S_ISBLK(st.st_mode)) {
      return invalid_argument(path + " is " + type_name(st.st_mode) +
                              ", not a file this run can write");
    }
    // A regular file (or /dev/null): opened for appending, so its content stays as it is.
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd.get() < 0) return errno_error("opening for writing", path, errno);
    return ok_status();
  }
  const std::string dir = folder_of(path);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) return errno_error("checking the folder", dir, errno);
  if (!S_ISDIR(dst.st_mode)) {
    return invalid_argument("the folder " + dir + " of " + path + " is " + type_name(dst.st_mode));
  }
  // The probe is a file of its own beside the path, never the path: ranks of one job name the
  // same output, and one rank's probe must neither fail another's (EEXIST) nor remove a file
  // another already writes. The name itself is checked against the folder's NAME_MAX.
  const std::string base = path.substr(path.find_last_of('/') == std::string::npos
                                           ? 0 : path.find_last_of('/') + 1);
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && base.size() > static_cast<std::size_t>(name_max)) {
    return errno_error("creating", path, ENAMETOOLONG);
  }
  static std::atomic<unsigned> file_counter{0};
  const std::string probe = dir + "/.stoker-probe-" + std::to_string(::getpid()) + "-f" +
                            std::to_string(file_counter++);
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) return errno_error("creating", path, errno);
  fd.reset();
  ::unlink(probe.c_str());  // the run creates the path when it writes it
  return ok_status();
}

Status diagnostic_output(const Status& written, bool strict, std::string_view who) {
  if (written.ok() || strict) return written;
  std::fprintf(stderr,
               "stoker %s: warning: %s (a diagnostic output: the run's result stands; %s makes "
               "this an error)\n",
               std::string(who).c_str(), printable(written.error().to_string()).c_str(),
               option_name("strict_outputs=True", "--strict-outputs").c_str());
  return ok_status();
}

}  // namespace stoker
