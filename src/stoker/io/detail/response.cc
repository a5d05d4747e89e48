#include "stoker/io/detail/response.h"

#include "stoker/io/detail/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace stoker::io::detail {

bool apply_header_line(std::string_view line, HttpResponse* resp) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = line.substr(colon + 1);
  const std::size_t start = value.find_first_not_of(" \t");
  value.remove_prefix(start == std::string_view::npos ? value.size() : start);
  if (name == "etag") {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    resp->etag = std::string(value);
  } else if (name == "content-length") {
    resp->content_length = parse_content_length(value);
    return true;
  } else if (name == "content-range") {
    resp->content_range = std::string(value);
  }
  return false;
}

int parse_status_line(std::string_view line) {
  if (line.substr(0, 5) != "HTTP/") return -1;
  const std::size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 5 || line.size() < sp + 4) return -1;
  int status = 0;
  for (std::size_t i = sp + 1; i < sp + 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return -1;
    status = status * 10 + (line[i] - '0');
  }
  const std::size_t after = sp + 4;
  if (after < line.size() && line[after] != ' ' && line[after] != '\r' && line[after] != '\n') return -1;
  return status;
}

std::int64_t parse_content_length(std::string_view value) {
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  std::int64_t v = -1;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || value.front() == '-' || ec != std::errc() ||
      ptr != value.data() + value.size()) {
    return -1;
  }
  return v;
}

Result<Bytes> body_for_range(HttpResponse resp, const ReadOptions& range, const std::string& what) {
  // A server that ignores If-Match still names the version it sent.
  if (!range.if_match.empty() && !resp.etag.empty() && resp.etag != range.if_match) {
    return failed_precondition(what + ": ETag " + server_text(resp.etag, 128) + " where " +
                               range.if_match + " was asked for (the object was replaced)");
  }
  if (range.whole()) return std::move(resp.body);
  if (resp.status == 206) {
    long long first = -1, last = -1, total = -1;
    if (std::sscanf(resp.content_range.c_str(), "bytes %lld-%lld/%lld", &first, &last, &total) < 2 ||
        first != range.offset) {
      return data_loss(what + ": asked for bytes from " + std::to_string(range.offset) +
                       ", server sent Content-Range '" + server_text(resp.content_range, 128) + "'");
    }
    if (range.length >= 0 && static_cast<std::int64_t>(resp.body.size()) > range.length)
      resp.body.resize(static_cast<std::size_t>(range.length));
    return std::move(resp.body);
  }
  const auto size = static_cast<std::int64_t>(resp.body.size());
  if (range.offset > size) return invalid_argument(what + ": range starts past the end");
  std::int64_t end = range.length < 0 ? size : std::min(size, range.offset + range.length);
  return Bytes(resp.body.begin() + range.offset, resp.body.begin() + end);
}

Result<ObjectInfo> info_from(const HttpResponse& resp, const std::string& what) {
  if (resp.content_length < 0) return data_loss(what + ": HEAD response without Content-Length");
  return ObjectInfo{resp.content_length, resp.etag};
}

}  // namespace stoker::io::detail
