#include "stoker/shm/socket_path.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stoker::shm {

Status ensure_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return errno == EACCES ? permission_denied("creating " + dir + ": " + std::strerror(errno))
                           : internal_error("creating " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return internal_error("stat " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return permission_denied(dir + " is not a directory (a symlink?)");
  if (st.st_uid != ::geteuid())
    return permission_denied(dir + " belongs to uid " + std::to_string(st.st_uid) +
                             ", not to this user");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return permission_denied(dir + " is accessible to other users (mode " + mode +
                             "); expected 0700");
  }
  return ok_status();
}

Result<std::string> default_socket_path(std::string_view name) {
  if (name.empty() || name.find('/') != std::string_view::npos)
    return invalid_argument("socket name '" + std::string(name) + "' must be a plain file name");
  std::string dir;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  if (xdg != nullptr && xdg[0] == '/' && ::stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == ::geteuid()) {
    dir = std::string(xdg) + "/stoker";
  } else {
    dir = "/tmp/stoker-" + std::to_string(::geteuid());
  }
  STOKER_RETURN_IF_ERROR(ensure_private_dir(dir));
  std::string path = dir + "/" + std::string(name) + ".sock";
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    return invalid_argument("socket path too long for AF_UNIX: " + path);
  return path;
}

}  // namespace stoker::shm
