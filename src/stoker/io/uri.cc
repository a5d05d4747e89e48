#include "stoker/io/uri.h"

#include <cctype>
#include <vector>

namespace stoker::io {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string fold_dots(std::string_view path) {
  std::vector<std::string_view> parts;
  const bool absolute = !path.empty() && path[0] == '/';
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view seg = path.substr(i, j - i);
    if (seg == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (seg != "." && !(seg.empty() && j != path.size())) {
      parts.push_back(seg);
    }
    i = j + 1;
  }
  std::string out = absolute ? "/" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k) out += '/';
    out += parts[k];
  }
  return out;
}

bool has_scheme(std::string_view s) {
  const std::size_t colon = s.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (std::size_t i = 1; i < colon; ++i) {
    const char c = s[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

bool is_remote_uri(std::string_view s) {
  return starts_with(s, "s3://") || starts_with(s, "http://") || starts_with(s, "https://");
}

std::string Uri::to_string() const {
  switch (scheme) {
    case Scheme::kFile: return path;
    case Scheme::kS3: return "s3://" + authority + "/" + path;
    case Scheme::kHttp: return "http://" + authority + path;
    case Scheme::kHttps: return "https://" + authority + path;
  }
  return path;
}

Result<Uri> parse_uri(std::string_view text) {
  if (text.empty()) return invalid_argument("empty URI");
  if (text.find('\0') != std::string_view::npos) return invalid_argument("a URI or path with a NUL byte");
  Uri u;
  auto split = [&](std::size_t skip) {
    std::size_t slash = text.find('/', skip);
    u.authority = std::string(text.substr(skip, slash == std::string_view::npos ? std::string_view::npos
                                                                                 : slash - skip));
    return slash == std::string_view::npos ? std::string() : std::string(text.substr(slash));
  };
  if (starts_with(text, "s3://")) {
    u.scheme = Scheme::kS3;
    std::string rest = split(5);
    if (u.authority.empty()) return invalid_argument("s3 URI without a bucket: " + std::string(text));
    u.path = rest.empty() ? "" : rest.substr(1);
  } else if (starts_with(text, "https://") || starts_with(text, "http://")) {
    const bool tls = starts_with(text, "https://");
    u.scheme = tls ? Scheme::kHttps : Scheme::kHttp;
    u.path = split(tls ? 8 : 7);
    if (u.authority.empty()) return invalid_argument("http URI without a host: " + std::string(text));
    if (u.path.empty()) u.path = "/";
  } else if (starts_with(text, "file://")) {
    // RFC 8089: file:///p and file://localhost/p are this machine; another host is not ours.
    std::string rest = split(7);
    if (!u.authority.empty() && u.authority != "localhost") {
      return invalid_argument("file URI naming another host ('" + u.authority + "'): " +
                              std::string(text));
    }
    u.authority.clear();
    u.path = rest;
    if (u.path.empty()) return invalid_argument("file URI without a path: " + std::string(text));
  } else if (has_scheme(text)) {
    return invalid_argument("unsupported URI scheme '" + std::string(text.substr(0, text.find("://"))) +
                            "' (file, s3, http and https are)");
  } else {
    u.path = std::string(text);
  }
  return u;
}

Result<std::string> resolve_uri(std::string_view ref, std::string_view base) {
  if (ref.empty()) return invalid_argument("empty media reference");
  STOKER_ASSIGN_OR_RETURN(Uri r, parse_uri(ref));
  // An absolute remote URI stays as written: an S3 key may contain "..", and no remote
  // reference can reach this machine's files, whatever its segments.
  if (r.remote()) return std::string(ref);
  if (r.path[0] == '/' || starts_with(ref, "file://")) return fold_dots(r.path);
  // A relative reference: join the directory of the base.
  STOKER_ASSIGN_OR_RETURN(Uri b, parse_uri(base));
  if (b.scheme == Scheme::kHttp || b.scheme == Scheme::kHttps) {
    std::string dir = b.path.substr(0, b.path.find('?'));
    dir = dir.substr(0, dir.rfind('/') + 1);
    const std::size_t q = r.path.find('?');
    std::string joined = fold_dots(dir + r.path.substr(0, q));
    if (joined.empty() || joined[0] != '/') joined = "/" + joined;
    b.path = joined + (q == std::string::npos ? "" : r.path.substr(q));
    return b.to_string();
  }
  if (b.scheme == Scheme::kS3) {
    const std::size_t slash = b.path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : b.path.substr(0, slash + 1);
    b.path = fold_dots("/" + dir + r.path).substr(1);
    return b.to_string();
  }
  const std::size_t slash = b.path.rfind('/');
  return fold_dots(slash == std::string::npos ? r.path : b.path.substr(0, slash + 1) + r.path);
}

}  // namespace stoker::io
