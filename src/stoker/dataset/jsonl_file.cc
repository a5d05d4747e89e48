#include "stoker/dataset/jsonl_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "stoker/base/mix.h"

namespace stoker::dataset {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class GzipDecompressor final : public JsonlDecompressor {
 public:
  GzipDecompressor(std::string name, DecompressOptions o, Sink sink) : JsonlDecompressor(std::move(name), o, std::move(sink)) {
    std::memset(&z_, 0, sizeof z_);
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;  // gzip only
  }
  ~GzipDecompressor() override {
    if (ok_) inflateEnd(&z_);
  }
  Status feed(std::span<const std::uint8_t> input) override {
    if (!ok_) return internal_error(name_ + ": zlib init failed");
    z_.next_in = const_cast<Bytef*>(input.data());
    z_.avail_in = static_cast<uInt>(input.size());
    started_ = started_ || !input.empty();
    bool pending = false;  // the last call filled the output buffer: more may be waiting
    for (;;) {
      if (ended_ && z_.avail_in > 0) {  // another gzip member follows (gzip -d reads them all)
        if (z_.next_in[0] == 0) {       // NUL padding after a member
          ++z_.next_in;
          --z_.avail_in;
          ++in_total_;
          continue;
        }
        inflateReset(&z_);
        ended_ = false;
      }
      if (z_.avail_in == 0 && !pending) break;
      z_.next_out = buf_;
      z_.avail_out = sizeof buf_;
      const uInt before = z_.avail_in;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const uInt consumed = before - z_.avail_in;
      const std::size_t produced = sizeof buf_ - z_.avail_out;
      in_total_ += consumed;
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return data_loss(name_ + ": corrupt gzip data near compressed byte " + std::to_string(in_total_) + ": " +
                         (z_.msg ? z_.msg : "inflate error " + std::to_string(rc)));
      STOKER_RETURN_IF_ERROR(emit(std::span<const std::uint8_t>(buf_, produced)));
      pending = z_.avail_out == 0;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        pending = false;
      } else if (consumed == 0 && produced == 0) {
        break;
      }
    }
    return ok_status();
  }
  Status finish() override {
    if (!started_) return data_loss(name_ + ": empty file (no gzip data)");
    if (!ended_) return data_loss(name_ + ": truncated gzip data (the stream ends early)");
    return ok_status();
  }

 private:
  z_stream z_;
  bool ok_ = false, ended_ = false, started_ = false;
  std::uint64_t in_total_ = 0;
  std::uint8_t buf_[1 << 16];
};

class ZstdDecompressor final : public JsonlDecompressor {
 public:
  ZstdDecompressor(std::string name, DecompressOptions o, Sink sink)
      : JsonlDecompressor(std::move(name), o, std::move(sink)), ctx_(ZSTD_createDCtx()) {
    if (ctx_) ZSTD_DCtx_setParameter(ctx_, ZSTD_d_windowLogMax, 27);  // ≤ 128 MiB of window
  }
  ~ZstdDecompressor() override { ZSTD_freeDCtx(ctx_); }
  Status feed(std::span<const std::uint8_t> input) override {
    if (!ctx_) return internal_error(name_ + ": zstd init failed");
    started_ = started_ || !input.empty();
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    for (;;) {
      ZSTD_outBuffer out{buf_, sizeof buf_, 0};
      const std::size_t before = in.pos;
      const std::size_t rc = ZSTD_decompressStream(ctx_, &out, &in);
      in_total_ += in.pos - before;
      if (ZSTD_isError(rc))
        return data_loss(name_ + ": corrupt zstd data near compressed byte " + std::to_string(in_total_) + ": " +
                         ZSTD_getErrorName(rc));
      STOKER_RETURN_IF_ERROR(emit(std::span<const std::uint8_t>(buf_, out.pos)));
      last_ = rc;
      if (in.pos == in.size && out.pos < out.size) break;  // input used up, nothing left waiting
    }
    return ok_status();
  }
  Status finish() override {
    if (!started_) return data_loss(name_ + ": empty file (no zstd frame)");
    if (last_ != 0) return data_loss(name_ + ": truncated zstd data (the last frame is incomplete)");
    return ok_status();
  }

 private:
  ZSTD_DCtx* ctx_;
  std::size_t last_ = 1;
  bool started_ = false;
  std::uint64_t in_total_ = 0;
  std::uint8_t buf_[1 << 17];
};

std::string identity_name(const std::string& path, const struct stat& st) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(path, ec).string();
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : abs) h = mix64(h ^ c);
  h = mix64(h ^ static_cast<std::uint64_t>(st.st_size));
  h = mix64(h ^ (static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(st.st_mtim.tv_nsec)));
  h = mix64(h ^ static_cast<std::uint64_t>(st.st_ino));
  std::string base = std::filesystem::path(path).filename().string();
  for (const char* s : {".gz", ".gzip", ".zst", ".zstd"})
    if (ends_with(base, s)) base.resize(base.size() - std::strlen(s));
  if (ends_with(base, ".jsonl")) base.resize(base.size() - 6);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return base + "-" + hex + ".jsonl";
}

}  // namespace

Compression compression_of(std::string_view path) {
  if (ends_with(path, ".gz") || ends_with(path, ".gzip")) return Compression::kGzip;
  if (ends_with(path, ".zst") || ends_with(path, ".zstd")) return Compression::kZstd;
  return Compression::kNone;
}

Status JsonlDecompressor::emit(std::span<const std::uint8_t> out) {
  if (out.empty()) return ok_status();
  out_bytes_ += out.size();
  if (out_bytes_ > options_.max_output_bytes)
    return resource_exhausted(name_ + ": refused: decompresses to more than " + std::to_string(options_.max_output_bytes) +
                              " bytes (the output cap)");
  for (std::uint8_t c : out) {
    if (c == '\n') {
      ++lines_;
      line_bytes_ = 0;
      if (lines_ > options_.max_records)
        return resource_exhausted(name_ + ": refused: more than " + std::to_string(options_.max_records) + " lines");
    } else if (++line_bytes_ > options_.max_record_bytes) {
      return resource_exhausted(name_ + ": refused: line " + std::to_string(lines_ + 1) + " is longer than the " +
                                std::to_string(options_.max_record_bytes) +
                                "-byte record cap (a decompression bomb, or not JSONL)");
    }
  }
  return sink_(out);
}

Result<std::unique_ptr<JsonlDecompressor>> JsonlDecompressor::create(Compression compression, std::string name,
                                                                     DecompressOptions options, Sink sink) {
  switch (compression) {
    case Compression::kGzip: return std::unique_ptr<JsonlDecompressor>(new GzipDecompressor(std::move(name), options, std::move(sink)));
    case Compression::kZstd: return std::unique_ptr<JsonlDecompressor>(new ZstdDecompressor(std::move(name), options, std::move(sink)));
    case Compression::kNone: break;
  }
  return invalid_argument(name + ": not a compressed file (.gz / .zst)");
}

Result<std::string> decompress_jsonl_to_cache(const std::string& path, const DecompressOptions& options, bool* reused) {
  const Compression c = compression_of(path);
  if (c == Compression::kNone) return invalid_argument(path + ": not a compressed JSONL file (.jsonl.gz / .jsonl.zst)");
  if (options.cache_dir.empty()) return invalid_argument(path + ": a cache folder is needed to decompress it into");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? not_found(path + ": no such file") : permission_denied(path + ": " + std::strerror(errno));
  struct stat st{};
  ::fstat(fd, &st);
  const std::string out = (std::filesystem::path(options.cache_dir) / identity_name(path, st)).string();
  if (::access(out.c_str(), R_OK) == 0) {
    ::close(fd);
    if (reused) *reused = true;
    return out;
  }
  if (reused) *reused = false;
  std::uint8_t magic[4] = {};
  const ssize_t got = ::pread(fd, magic, 4, 0);
  const bool gz = got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  const bool zst = got >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd;
  if ((c == Compression::kGzip && !gz) || (c == Compression::kZstd && !zst)) {
    ::close(fd);
    return invalid_argument(path + ": not " + (c == Compression::kGzip ? "gzip" : "zstd") + " data (wrong magic bytes)");
  }
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = out + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  std::error_code ec;
  std::filesystem::create_directories(options.cache_dir, ec);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    ::close(fd);
    return permission_denied(tmp + ": cannot create: " + std::strerror(errno));
  }
  auto sink = [&](std::span<const std::uint8_t> b) -> Status {
    if (std::fwrite(b.data(), 1, b.size(), f) != b.size()) return data_loss(tmp + ": write failed (disk full?)");
    return ok_status();
  };
  auto dec = JsonlDecompressor::create(c, path, options, sink);
  Status s = dec.ok() ? ok_status() : Status(dec.error());
  std::vector<std::uint8_t> buf(std::size_t{1} << 20);
  for (off_t at = 0; s.ok();) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), at);
    if (n < 0) {
      if (errno == EINTR) continue;
      s = unavailable(path + ": read failed: " + std::strerror(errno));
      break;
    }
    if (n == 0) {
      s = (*dec)->finish();
      break;
    }
    s = (*dec)->feed(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    at += n;
  }
  ::close(fd);
  const bool closed = std::fclose(f) == 0;
  if (s.ok() && !closed) s = data_loss(tmp + ": write failed");
  if (s.ok() && ::rename(tmp.c_str(), out.c_str()) != 0) s = data_loss(out + ": cannot rename into place: " + std::strerror(errno));
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return std::move(s).error();
  }
  return out;
}

std::string jsonl_index_path(const std::string& jsonl_path) {
  const std::size_t slash = jsonl_path.rfind('/');
  const std::size_t dot = jsonl_path.rfind('.');
  const bool has_suffix = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_suffix ? jsonl_path.substr(0, dot) : jsonl_path) + ".jsonl.idx";
}

Result<std::vector<std::uint64_t>> decode_jsonl_index(std::span<const std::uint8_t> bytes, std::uint64_t file_size,
                                                      const std::string& name) {
  if (bytes.size() < 8 || bytes.size() % 8 != 0)
    return invalid_argument(name + ": " + std::to_string(bytes.size()) + " bytes is not a .jsonl.idx (N+1 uint64)");
  std::vector<std::uint64_t> out(bytes.size() / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | bytes[i * 8 + b];
    if (i > 0 && v <= out[i - 1])
      return invalid_argument(name + ": entry " + std::to_string(i) + " does not follow entry " + std::to_string(i - 1));
    out[i] = v;
  }
  if (out.back() != file_size)
    return invalid_argument(name + ": ends at byte " + std::to_string(out.back()) + " but the file has " +
                            std::to_string(file_size) + " (stale index)");
  return out;
}

std::string_view trim_jsonl_record(std::string_view range) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!range.empty() && ws(range.front())) range.remove_prefix(1);
  while (!range.empty() && ws(range.back())) range.remove_suffix(1);
  return range;
}

}  // namespace stoker::dataset
