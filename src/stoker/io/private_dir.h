// PrivateDir: a folder only this user can touch — the per-user cache (remote manifests). Opened
// with O_NOFOLLOW|O_DIRECTORY and verified on every use: owned by the effective uid, no
// group/other permission bits, not a symlink. Files beneath it are opened with
// openat(fd, name, O_NOFOLLOW|O_CLOEXEC) and must be regular files of this user; new files are
// written to a fresh temporary name (O_EXCL), fsync'ed and renamed into place. So a folder or
// file planted by another user (a symlink to a victim file, a forged copy) is refused, never
// followed or used. Move-only (owns the directory fd); const methods are thread-safe.
// Errors: PermissionDenied (foreign owner, open permissions, a symlink, not a directory),
// NotFound (a missing file), Unavailable / ResourceExhausted (I/O, no space).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::io {

// Where stoker caches by default: $XDG_CACHE_HOME/stoker, else $HOME/.cache/stoker, else
// ${TMPDIR:-/tmp}/stoker-cache-<euid> (a name per user: never one folder shared by all). The
// cache_dir option (--cache-dir, else $STOKER_CACHE_DIR, read by config/) replaces it; either
// way the folder is a PrivateDir, verified on every use.
std::string user_cache_dir();

class PrivateDir {
 public:
  // Opens `path`, creating it (mode 0700; missing parents with the default mode) when absent.
  // A folder of this user that is readable but not writable by others (an older stoker made
  // ~/.cache/stoker 0755) is narrowed to 0700; one writable by others, owned by another uid, or
  // a symlink is refused with a message naming the folder, its owner and this uid.
  static Result<PrivateDir> open(const std::string& path);

  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // Checks again that the held folder is still this user's, closed to others, and still the
  // folder `path()` names (not renamed away and replaced).
  Status verify() const;

  // `name` (one path component) opened read-only, O_NOFOLLOW; must be a regular file owned by
  // this user with one link. The caller owns the returned fd. NotFound when missing.
  Result<int> open_file(const std::string& name) const;
  // A small file's content (at most `max_bytes`).
  Result<std::string> read_small(const std::string& name, std::size_t max_bytes) const;

  // A new file beneath the folder under a fresh temporary name (O_CREAT|O_EXCL|O_NOFOLLOW,
  // mode 0600). commit() fsyncs, closes and renames it to `name`; discard() removes it.
  struct Temp {
    int fd = -1;
    std::string name;
  };
  Result<Temp> create_temp(const std::string& name) const;
  Status commit(Temp& temp, const std::string& name) const;
  void discard(Temp& temp) const;
  Status write_atomic(const std::string& name, std::string_view content) const;

  // Bytes free for this user on the folder's file system.
  Result<std::int64_t> free_bytes() const;

 private:
  PrivateDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace stoker::io
