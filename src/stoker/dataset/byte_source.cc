#include "stoker/dataset/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stoker::dataset {
namespace {

Status check_range(const ByteSource& s, std::int64_t offset, std::size_t n) {
  if (offset < 0 || static_cast<std::uint64_t>(offset) > static_cast<std::uint64_t>(s.size()) ||
      n > static_cast<std::uint64_t>(s.size() - offset))
    return data_loss(s.name() + ": truncated: bytes " + std::to_string(offset) + "+" +
                     std::to_string(n) + " lie past its end (" + std::to_string(s.size()) +
                     " bytes)");
  return ok_status();
}

class FileSource final : public ByteSource {
 public:
  FileSource(std::string name, int fd, std::int64_t size) : name_(std::move(name)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  const std::string& name() const override { return name_; }
  std::int64_t size() const override { return size_; }
  Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const override {
    STOKER_RETURN_IF_ERROR(check_range(*this, offset, out.size()));
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                                static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return unavailable(name_ + ": read failed at byte " + std::to_string(offset + done) + ": " +
                           std::strerror(errno));
      }
      if (n == 0)  // the file shrank since it was opened
        return data_loss(name_ + ": truncated: the file ends at byte " +
                         std::to_string(offset + done) + " (it changed while open)");
      done += static_cast<std::size_t>(n);
    }
    return ok_status();
  }

 private:
  std::string name_;
  int fd_;
  std::int64_t size_;
};

class CallbackSource final : public ByteSource {
 public:
  CallbackSource(std::string name, std::int64_t size, RangeReader read)
      : name_(std::move(name)), size_(size), read_(std::move(read)) {}
  const std::string& name() const override { return name_; }
  std::int64_t size() const override { return size_; }
  Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const override {
    STOKER_RETURN_IF_ERROR(check_range(*this, offset, out.size()));
    if (out.empty()) return ok_status();
    Status s = read_(offset, out);
    if (!s.ok()) return std::move(s).error().with_context(name_);
    return ok_status();
  }

 private:
  std::string name_;
  std::int64_t size_;
  RangeReader read_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::vector<std::uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(bytes_.size()); }
  Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const override {
    STOKER_RETURN_IF_ERROR(check_range(*this, offset, out.size()));
    if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return ok_status();
  }

 private:
  std::string name_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return not_found(path + ": no such file");
    if (e == EACCES || e == EPERM) return permission_denied(path + ": permission denied");
    return invalid_argument(path + ": cannot open: " + std::strerror(e));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + ": not a regular file");
  }
  return std::unique_ptr<ByteSource>(new FileSource(path, fd, static_cast<std::int64_t>(st.st_size)));
}

std::unique_ptr<ByteSource> make_range_source(std::string name, std::int64_t size, RangeReader read) {
  return std::make_unique<CallbackSource>(std::move(name), size < 0 ? 0 : size, std::move(read));
}

std::unique_ptr<ByteSource> make_memory_source(std::string name, std::vector<std::uint8_t> bytes) {
  return std::make_unique<MemorySource>(std::move(name), std::move(bytes));
}

Result<std::vector<std::uint8_t>> read_range(const ByteSource& source, std::int64_t offset,
                                             std::int64_t length) {
  if (length < 0) return invalid_argument(source.name() + ": negative read length");
  STOKER_RETURN_IF_ERROR(check_range(source, offset, static_cast<std::size_t>(length)));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(length));
  STOKER_RETURN_IF_ERROR(source.read_at(offset, out));
  return out;
}

}  // namespace stoker::dataset
