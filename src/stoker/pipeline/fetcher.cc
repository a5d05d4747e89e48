#include "stoker/pipeline/fetcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stoker::pipeline {

ByteBudget::Lease& ByteBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    reset();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
  }
  return *this;
}

void ByteBudget::Lease::reset() {
  if (budget_ != nullptr) budget_->release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

Result<ByteBudget::Lease> ByteBudget::acquire(std::int64_t bytes, std::stop_token stop) {
  std::unique_lock lock(mu_);
  bool ok = cv_.wait(lock, stop, [&] { return in_flight_ == 0 || in_flight_ + bytes <= limit_; });
  if (!ok) return cancelled("stopped while waiting for fetch budget");
  in_flight_ += bytes;
  if (in_flight_ > peak_) peak_ = in_flight_;
  return Lease(this, bytes);
}

void ByteBudget::Lease::resize(std::int64_t bytes) {
  if (budget_ == nullptr || bytes == bytes_) return;
  if (bytes > bytes_) {
    budget_->charge(bytes - bytes_);
  } else {
    budget_->release(bytes_ - bytes);
  }
  bytes_ = bytes;
}

void ByteBudget::charge(std::int64_t bytes) {
  std::lock_guard lock(mu_);
  in_flight_ += bytes;
  if (in_flight_ > peak_) peak_ = in_flight_;
}

void ByteBudget::release(std::int64_t bytes) {
  {
    std::lock_guard lock(mu_);
    in_flight_ -= bytes;
  }
  cv_.notify_all();
}

std::int64_t ByteBudget::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

std::int64_t ByteBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

Fetcher::~Fetcher() = default;

void Fetcher::fetch_async(const std::string& uri,
                          std::function<void(Result<std::vector<std::uint8_t>>)> done) const {
  done(unimplemented("this fetcher has no asynchronous reads: " + uri));
}

namespace {

bool has_scheme(const std::string& s) {
  std::size_t colon = s.find("://");
  return colon != std::string::npos && colon > 0 &&
         s.find_first_of("/\\") > colon;  // "a/b://c" is a path
}

Error errno_error(const std::string& what, const std::string& path) {
  int e = errno;
  std::string msg = what + " " + path + ": " + std::strerror(e);
  if (e == ENOENT || e == ENOTDIR) return not_found(msg);
  if (e == EACCES || e == EPERM) return permission_denied(msg);
  return unavailable(msg);
}

class LocalFetcher final : public Fetcher {
 public:
  Status fetch(const std::string& uri, ByteBudget& budget, std::stop_token stop,
               FetchedMedia* out) const override {
    std::string path = uri;
    if (path.rfind("file://", 0) == 0) {
      path = path.substr(7);
    } else if (has_scheme(path)) {
      return unimplemented("no fetcher for " + uri.substr(0, uri.find("://") + 3) +
                           " URIs yet (local files only): " + uri);
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_error("opening", path);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      Error e = errno_error("stat", path);
      ::close(fd);
      return e;
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return invalid_argument("not a regular file: " + path);
    }
    const std::int64_t size = st.st_size;
    Result<ByteBudget::Lease> lease = budget.acquire(size, stop);
    if (!lease.ok()) {
      ::close(fd);
      return std::move(lease).error();
    }
    out->lease = std::move(lease).value();
    out->bytes.resize(static_cast<std::size_t>(size));
    std::int64_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd, out->bytes.data() + done, static_cast<std::size_t>(size - done), done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Error e = n < 0 ? errno_error("reading", path)
                        : data_loss("short read of " + path + ": " + std::to_string(done) + " of " +
                                    std::to_string(size) + " bytes");
        ::close(fd);
        return e;
      }
      done += n;
    }
    ::close(fd);
    return ok_status();
  }
};

}  // namespace

std::unique_ptr<Fetcher> make_local_fetcher() { return std::make_unique<LocalFetcher>(); }

std::string resolve_media(const std::string& ref, const std::string& manifest_path) {
  if (ref.rfind("file://", 0) == 0) return ref.substr(7);
  if (has_scheme(ref) || (!ref.empty() && ref[0] == '/')) return ref;
  std::size_t slash = manifest_path.rfind('/');
  if (slash == std::string::npos) return ref;
  return manifest_path.substr(0, slash + 1) + ref;
}

}  // namespace stoker::pipeline
