#include "stoker/io/uri.h"

#include <vector>

namespace stoker::io {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool has_scheme(const std::string& s) {
  return starts_with(s, "s3://") || starts_with(s, "http://") || starts_with(s, "https://") ||
         starts_with(s, "file://");
}

// Folds "." and ".." in a '/'-separated path; `keep_leading` keeps a leading '/'.
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  const bool absolute = !path.empty() && path[0] == '/';
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string seg = path.substr(i, j - i);
    if (seg == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (seg != "." && !(seg.empty() && j != path.size())) {
      parts.push_back(seg);
    }
    i = j + 1;
  }
  std::string out = absolute ? "/" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
  return out;
}

}  // namespace

std::string Uri::to_string() const {
  switch (scheme) {
    case Scheme::kFile: return path;
    case Scheme::kS3: return "s3://" + authority + "/" + path;
    case Scheme::kHttp: return "http://" + authority + path;
    case Scheme::kHttps: return "https://" + authority + path;
  }
  return path;
}

Result<Uri> parse_uri(const std::string& text) {
  if (text.empty()) return invalid_argument("empty URI");
  Uri u;
  auto split = [&](std::size_t skip) {
    std::size_t slash = text.find('/', skip);
    u.authority = text.substr(skip, slash == std::string::npos ? std::string::npos : slash - skip);
    return slash == std::string::npos ? std::string() : text.substr(slash);
  };
  if (starts_with(text, "s3://")) {
    u.scheme = Scheme::kS3;
    std::string rest = split(5);
    if (u.authority.empty()) return invalid_argument("s3 URI without a bucket: " + text);
    u.path = rest.empty() ? "" : rest.substr(1);
  } else if (starts_with(text, "https://") || starts_with(text, "http://")) {
    const bool tls = starts_with(text, "https://");
    u.scheme = tls ? Scheme::kHttps : Scheme::kHttp;
    u.path = split(tls ? 8 : 7);
    if (u.authority.empty()) return invalid_argument("http URI without a host: " + text);
    if (u.path.empty()) u.path = "/";
  } else if (starts_with(text, "file://")) {
    u.path = text.substr(7);
    if (u.path.empty()) return invalid_argument("file URI without a path: " + text);
  } else if (text.find("://") != std::string::npos && text.find("://") < text.find('/')) {
    return invalid_argument("unsupported URI scheme: " + text.substr(0, text.find("://")));
  } else {
    u.path = text;
  }
  return u;
}

std::string resolve_uri(const std::string& ref, const std::string& base) {
  if (starts_with(ref, "file://")) return ref.substr(7);
  if (has_scheme(ref) || (!ref.empty() && ref[0] == '/')) return ref;
  Result<Uri> b = parse_uri(base);
  if (!b.ok()) return ref;
  Uri u = *b;
  if (u.scheme == Scheme::kHttp || u.scheme == Scheme::kHttps) {
    std::string path = u.path.substr(0, u.path.find('?'));
    path = path.substr(0, path.rfind('/') + 1) + ref;
    u.path = normalize(path);
    return u.to_string();
  }
  if (u.scheme == Scheme::kS3) {
    std::size_t slash = u.path.rfind('/');
    std::string dir = slash == std::string::npos ? "" : u.path.substr(0, slash + 1);
    u.path = normalize("/" + dir + ref).substr(1);
    return u.to_string();
  }
  std::size_t slash = u.path.rfind('/');
  if (slash == std::string::npos) return ref;
  return normalize(u.path.substr(0, slash + 1) + ref);
}

}  // namespace stoker::io
