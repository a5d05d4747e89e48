#include "stoker/base/file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "stoker/base/atomic_file.h"

namespace stoker {
namespace {

Error errno_error(const std::string& what, const std::string& path, int err) {
  std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return not_found(msg);
  if (err == EACCES || err == EPERM) return permission_denied(msg);
  return data_loss(msg);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Result<std::vector<std::uint8_t>> read_file(const std::string& path, std::size_t max_bytes) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read_small_file(path, max_bytes));
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  return read_small_file(path, max_bytes);
}

Status write_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  std::string tmp = path + ".tmp";
  {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
    if (!f) return errno_error("creating", tmp, errno);
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
      return errno_error("writing", tmp, errno);
    if (std::fflush(f.get()) != 0) return errno_error("writing", tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return errno_error("renaming to", path, errno);
  return ok_status();
}

Status write_text_file(const std::string& path, std::string_view text) {
  return write_file(path, std::span<const std::uint8_t>(
                              reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace stoker
