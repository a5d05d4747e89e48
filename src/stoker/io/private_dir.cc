#include "stoker/io/private_dir.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace stoker::io {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

Error io_error(int err, const std::string& what) {
  if (err == ENOSPC || err == EDQUOT) return resource_exhausted(what + ": " + errno_text(err));
  if (err == EACCES || err == EPERM) return permission_denied(what + ": " + errno_text(err));
  if (err == ENOENT) return not_found(what + ": " + errno_text(err));
  return unavailable(what + ": " + errno_text(err));
}

std::string octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

const char* kHint = "; set --cache-dir (cache_dir, $STOKER_CACHE_DIR) to a folder of your own";

bool one_component(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// Owner, type and permission bits of an open directory: the whole check behind open/verify.
Status check_dir(int fd, const std::string& path, bool narrow) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(errno, "cache folder " + path);
  if (!S_ISDIR(st.st_mode)) return permission_denied("cache folder " + path + " is not a directory");
  const uid_t me = ::geteuid();
  if (st.st_uid != me) {
    return permission_denied("cache folder " + path + " belongs to uid " +
                             std::to_string(st.st_uid) + ", not to this user (uid " +
                             std::to_string(me) + "): refusing it, another user could plant files there" +
                             kHint);
  }
  if ((st.st_mode & 022) != 0) {
    return permission_denied("cache folder " + path + " has mode " + octal(st.st_mode) +
                             " (writable by group or others): refusing it" + kHint +
                             ", or chmod 700 it");
  }
  if ((st.st_mode & 077) != 0) {
    if (!narrow) {
      return permission_denied("cache folder " + path + " has mode " + octal(st.st_mode) +
                               " (open to group or others)");
    }
    if (::fchmod(fd, 0700) != 0) return io_error(errno, "chmod 700 cache folder " + path);
  }
  return ok_status();
}

std::string random_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  const std::uint64_t r = (std::uint64_t{rd()} << 32) ^ rd() ^ (counter.fetch_add(1) << 48);
  char b[40];
  std::snprintf(b, sizeof b, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(r));
  return b;
}

}  // namespace

std::string user_cache_dir() {
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d != nullptr && *d != '\0') {
    return std::string(d) + "/stoker";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/stoker";
  }
  std::string tmp = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t == '/') tmp = t;
  return tmp + "/stoker-cache-" + std::to_string(::geteuid());
}

Result<PrivateDir> PrivateDir::open(const std::string& path) {
  if (path.empty()) return invalid_argument("cache folder: empty path");
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::filesystem::path parent = std::filesystem::path(p).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // the user's own tree
  if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
    return io_error(errno, "creating cache folder " + p);
  }
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      struct stat st {};
      const bool link = ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
      return permission_denied("cache folder " + p + (link ? " is a symlink" : " is not a directory") +
                               " (owner uid " + std::to_string(st.st_uid) + "): refusing it" + kHint);
    }
    return io_error(err, "opening cache folder " + p);
  }
  PrivateDir dir(p, fd);
  STOKER_RETURN_IF_ERROR(check_dir(fd, p, /*narrow=*/true));
  return dir;
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) ::close(fd_);
}

Status PrivateDir::verify() const {
  STOKER_RETURN_IF_ERROR(check_dir(fd_, path_, /*narrow=*/false));
  struct stat held {}, named {};
  if (::fstat(fd_, &held) != 0 || ::lstat(path_.c_str(), &named) != 0 ||
      held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
    return permission_denied("cache folder " + path_ + " was replaced while in use" + kHint);
  }
  return ok_status();
}

Result<int> PrivateDir::open_file(const std::string& name) const {
  if (!one_component(name)) return invalid_argument("cache file name " + name);
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return permission_denied("cache file " + path_ + "/" + name + " is a symlink");
    return io_error(err, "opening cache file " + path_ + "/" + name);
  }
  struct stat st {};
  std::string bad;
  if (::fstat(fd, &st) != 0) {
    bad = errno_text(errno);
  } else if (!S_ISREG(st.st_mode)) {
    bad = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    bad = "owned by uid " + std::to_string(st.st_uid);
  } else if (st.st_nlink != 1) {
    bad = std::to_string(st.st_nlink) + " hard links";
  } else if ((st.st_mode & 022) != 0) {
    bad = "writable by group or others";
  }
  if (!bad.empty()) {
    ::close(fd);
    return permission_denied("cache file " + path_ + "/" + name + ": " + bad + ", refusing it");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::string> PrivateDir::read_small(const std::string& name, std::size_t max_bytes) const {
  STOKER_ASSIGN_OR_RETURN(int fd, open_file(name));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error(err, "reading cache file " + path_ + "/" + name);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return data_loss("cache file " + path_ + "/" + name + " is over " + std::to_string(max_bytes) +
                       " bytes");
    }
  }
  ::close(fd);
  return out;
}

Result<PrivateDir::Temp> PrivateDir::create_temp(const std::string& name) const {
  if (!one_component(name)) return invalid_argument("cache file name " + name);
  for (int attempt = 0; attempt < 8; ++attempt) {
    Temp t{.fd = -1, .name = name + random_suffix()};
    t.fd = ::openat(fd_, t.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (t.fd >= 0) return t;
    if (errno != EEXIST) return io_error(errno, "creating cache file " + path_ + "/" + t.name);
  }
  return unavailable("creating a temporary file in " + path_ + ": names taken");
}

Status PrivateDir::commit(Temp& temp, const std::string& name) const {
  if (!one_component(name)) return invalid_argument("cache file name " + name);
  const bool synced = ::fsync(temp.fd) == 0;
  const int sync_errno = errno;
  const bool closed = ::close(temp.fd) == 0;
  const int close_errno = errno;
  temp.fd = -1;
  if (!synced || !closed) {
    ::unlinkat(fd_, temp.name.c_str(), 0);
    return io_error(!synced ? sync_errno : close_errno, "writing cache file " + path_ + "/" + temp.name);
  }
  if (::renameat(fd_, temp.name.c_str(), fd_, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(fd_, temp.name.c_str(), 0);
    return io_error(err, "renaming cache file to " + path_ + "/" + name);
  }
  ::fsync(fd_);  // the rename itself, durable
  return ok_status();
}

void PrivateDir::discard(Temp& temp) const {
  if (temp.fd >= 0) ::close(temp.fd);
  temp.fd = -1;
  if (!temp.name.empty()) ::unlinkat(fd_, temp.name.c_str(), 0);
}

Status PrivateDir::write_atomic(const std::string& name, std::string_view content) const {
  STOKER_ASSIGN_OR_RETURN(Temp t, create_temp(name));
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(t.fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      discard(t);
      return io_error(err, "writing cache file " + path_ + "/" + name);
    }
    done += static_cast<std::size_t>(n);
  }
  return commit(t, name);
}

Result<std::int64_t> PrivateDir::free_bytes() const {
  struct statvfs vfs {};
  if (::fstatvfs(fd_, &vfs) != 0) return io_error(errno, "free space of " + path_);
  return static_cast<std::int64_t>(vfs.f_bavail) * static_cast<std::int64_t>(vfs.f_frsize);
}

}  // namespace stoker::io
