#include "stoker/io/uri.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "stoker/base/elide.h"

namespace stoker::io {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}
bool is_userinfo_char(char c) {  // RFC 3986 unreserved, sub-delims and ':' ('%' checked apart)
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("-._~!$&'()*+,;=:").find(c) != std::string_view::npos;
}

// a.b.c.d, each 0-255 in plain decimal without leading zeros.
bool dotted_quad(std::string_view h) {
  in_addr addr{};
  char back[INET_ADDRSTRLEN];
  return ::inet_pton(AF_INET, std::string(h).c_str(), &addr) == 1 &&
         ::inet_ntop(AF_INET, &addr, back, sizeof back) != nullptr && h == back;
}

Error bad(std::string_view what, std::string_view text) {
  return invalid_argument(std::string(what) + ": " + shown_uri(text));
}

std::string byte_hex(unsigned char c) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", c);
  return b;
}

// The first control character, or a '%' not followed by two hex digits: the problem, or "".
std::string bad_byte(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (is_control(c)) return "a control character (" + byte_hex(c) + ") at byte " + std::to_string(i);
    if (c == '%' && (i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])))
      return "a '%' not followed by two hex digits at byte " + std::to_string(i);
  }
  return "";
}

// `[userinfo@]host[:port]` of an http(s) URI into u->host / u->port; "" or the problem.
std::string check_authority(std::string_view a, Uri* u) {
  if (a.empty()) return "no host";
  if (a.find('\\') != std::string_view::npos)
    return "a backslash in the host part (URL parsers disagree where such a host ends)";
  const std::size_t at = a.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view user = a.substr(0, at);
    if (user.find('@') != std::string_view::npos) return "more than one '@' in the host part";
    for (char c : user) {
      if (!is_userinfo_char(c) && c != '%') return "a character not allowed in a URL's user part";
    }
    a.remove_prefix(at + 1);
  }
  std::string_view port;
  if (!a.empty() && a[0] == '[') {  // an IPv6 literal (no zone id)
    const std::size_t close = a.find(']');
    if (close == std::string_view::npos || close < 3) return "an unclosed or empty IPv6 address";
    in6_addr addr{};
    if (::inet_pton(AF_INET6, std::string(a.substr(1, close - 1)).c_str(), &addr) != 1)
      return "a malformed IPv6 address (zone ids are not supported)";
    u->host = std::string(a.substr(0, close + 1));
    const std::string_view rest = a.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') return "text after the IPv6 address";
    if (rest.size() == 1) return "an empty port";
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const std::size_t colon = a.find(':');
    const std::string_view host = a.substr(0, colon);
    if (host.empty()) return "no host";
    if (host.size() > 253) return "a host name over 253 bytes";
    for (char c : host) {
      if (static_cast<unsigned char>(c) >= 0x80)
        return "a non-ASCII host name (write its punycode form, xn--…)";
      if (!is_host_char(c)) return "a character not allowed in a host name ('" + std::string(1, c) + "')";
    }
    // A last label of digits (or 0x…) makes the host an IPv4 address to URL parsers, which
    // read "2130706433", "0x7f.1" or "017.0.0.1" as 127.0.0.1 (and differ on some): only the
    // dotted-quad form is accepted.
    std::string_view last = host.substr(0, host.size() - (host.back() == '.' ? 1 : 0));
    last = last.substr(last.rfind('.') == std::string_view::npos ? 0 : last.rfind('.') + 1);
    const bool numeric = !last.empty() &&
        (std::all_of(last.begin(), last.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
         last.substr(0, 2) == "0x" || last.substr(0, 2) == "0X");
    if (numeric && !dotted_quad(host)) return "an IPv4 address not in dotted-quad form";
    u->host = std::string(host);
    if (colon != std::string_view::npos) {
      port = a.substr(colon + 1);
      if (port.empty()) return "an empty port";
    }
  }
  if (!port.empty()) {
    if (port.size() > 5) return "a port out of range (1-65535)";
    int v = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return "a port that is not a number";
      v = v * 10 + (c - '0');
    }
    if (v < 1 || v > 65535) return "a port out of range (1-65535)";
    u->port = v;
  }
  return "";
}

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
  if (text.find('\0') != std::string_view::npos)
    return bad("a URI or path with a NUL byte", text.substr(0, text.find('\0')));
  Uri u;
  // The authority ends at the first '/', '?' or '#' (RFC 3986 §3.2); the rest is the path.
  auto split = [&](std::size_t skip, std::string_view ends) {
    std::size_t end = text.find_first_of(ends, skip);
    u.authority = std::string(text.substr(skip, end == std::string_view::npos ? std::string_view::npos
                                                                               : end - skip));
    return end == std::string_view::npos ? std::string() : std::string(text.substr(end));
  };
  if (starts_with(text, "s3://")) {
    u.scheme = Scheme::kS3;
    std::string rest = split(5, "/");
    if (u.authority.empty()) return bad("s3 URI without a bucket", text);
    if (u.authority.size() > 255) return bad("s3 bucket name over 255 bytes", text);
    for (char c : u.authority) {
      if (!is_host_char(c)) return bad("s3 bucket name with a character S3 does not allow", text);
    }
    u.path = rest.empty() ? "" : rest.substr(1);
    if (u.path.size() > kMaxS3KeyBytes) {
      return bad("s3 key of " + std::to_string(u.path.size()) + " bytes (S3 allows " +
                     std::to_string(kMaxS3KeyBytes) + ")", text);
    }
    for (unsigned char c : u.path) {
      if (is_control(c)) return bad("s3 key with a control character (" + byte_hex(c) + ")", text);
    }
  } else if (starts_with(text, "https://") || starts_with(text, "http://")) {
    const bool tls = starts_with(text, "https://");
    u.scheme = tls ? Scheme::kHttps : Scheme::kHttp;
    if (text.size() > kMaxUrlBytes) {
      return bad("URL of " + std::to_string(text.size()) + " bytes (over the " +
                     std::to_string(kMaxUrlBytes) + "-byte limit)", text);
    }
    if (std::string why = bad_byte(text); !why.empty()) return bad("URL with " + why, text);
    u.path = split(tls ? 8 : 7, "/?#");
    if (std::string why = check_authority(u.authority, &u); !why.empty()) {
      return bad("malformed URL (" + why + ")", text);
    }
    if (u.path.empty() || u.path[0] != '/') u.path = "/" + u.path;
  } else if (starts_with(text, "file://")) {
    // RFC 8089: file:///p and file://localhost/p are this machine; another host is not ours.
    std::string rest = split(7, "/");
    if (!u.authority.empty() && u.authority != "localhost") {
      return bad("file URI naming another host ('" + elide_middle(u.authority, 64) + "')", text);
    }
    u.authority.clear();
    u.path = rest;
    if (u.path.empty()) return bad("file URI without a path", text);
  } else if (has_scheme(text)) {
    return invalid_argument("unsupported URI scheme '" +
                            elide_middle(text.substr(0, text.find("://")), 64) +
                            "' (file, s3, http and https are)");
  } else {
    u.path = std::string(text);
  }
  return u;
}

std::string shown_uri(std::string_view text) {
  std::string out = elide_middle(text, kShownNameBytes);
  for (char& c : out) {
    if (is_control(static_cast<unsigned char>(c))) c = '?';
  }
  return out;
}

std::string request_url(std::string_view url) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(url.size());
  for (unsigned char c : url) {
    if (c <= 0x20 || c >= 0x7f ||
        std::string_view("\"<>\\^`{|}").find(static_cast<char>(c)) != std::string_view::npos) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
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
    STOKER_RETURN_IF_ERROR(parse_uri(b.to_string()));  // the joined URL, validated
    return b.to_string();
  }
  if (b.scheme == Scheme::kS3) {
    const std::size_t slash = b.path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : b.path.substr(0, slash + 1);
    b.path = fold_dots("/" + dir + r.path).substr(1);
    STOKER_RETURN_IF_ERROR(parse_uri(b.to_string()));  // the joined key, validated
    return b.to_string();
  }
  const std::size_t slash = b.path.rfind('/');
  return fold_dots(slash == std::string::npos ? r.path : b.path.substr(0, slash + 1) + r.path);
}

}  // namespace stoker::io
