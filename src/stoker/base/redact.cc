#include "stoker/base/redact.h"

#include <array>
#include <cctype>
#include <cstring>

namespace stoker {
namespace {

// Query parameters that carry a credential in the URL schemes users put in manifests: AWS SigV4
// and SigV2 presigned URLs, GCS signed URLs, Azure SAS (sig), OAuth-style tokens, API keys.
constexpr std::array<std::string_view, 22> kSecretNames = {
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid",
    "signature", "sig", "token", "access_token", "id_token", "refresh_token", "session_token",
    "security_token", "x-goog-signature", "x-goog-credential", "googleaccessid", "key", "api_key",
    "apikey", "password", "passwd", "secret", "client_secret"};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// Where a query value ends: the next parameter, the fragment, or anything that cannot be part of
// a URL as it appears inside prose or JSON.
bool value_end(char c) {
  return c == '&' || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' ||
         std::isspace(static_cast<unsigned char>(c));
}

// "...?sig=abc: HTTP 403", "(...?sig=abc)": punctuation that ends a URL inside a sentence.
bool punctuation_end(std::string_view text, std::size_t k) {
  const char c = text[k];
  if (c != ':' && c != ',' && c != ';' && c != ')' && c != '.') return false;
  return k + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[k + 1]));
}

bool authority_end(char c) {
  return c == '/' || c == '?' || c == '#' || value_end(c);
}

}  // namespace

bool is_secret_parameter(std::string_view name) {
  for (std::string_view s : kSecretNames) {
    if (iequals(name, s)) return true;
  }
  return false;
}

namespace {

// Each matcher looks at text[i]; on a match it appends the redacted form to `out`, moves `i`
// past what it consumed and returns true.

// ?name=value, &name=value (and ;name=value, the old separator).
bool redact_query(std::string_view text, std::size_t& i, std::string& out) {
  const char c = text[i];
  if ((c != '?' && c != '&' && c != ';') || i + 1 >= text.size()) return false;
  std::size_t j = i + 1;
  while (j < text.size() && name_char(text[j])) ++j;
  if (j == i + 1 || j >= text.size() || text[j] != '=' ||
      !is_secret_parameter(text.substr(i + 1, j - i - 1))) {
    return false;
  }
  out.append(text.substr(i, j + 1 - i));
  std::size_t k = j + 1;
  while (k < text.size() && !value_end(text[k]) && !punctuation_end(text, k)) ++k;
  if (k > j + 1) out.append(kRedacted);
  i = k;
  return true;
}

// scheme://user:password@host → scheme://REDACTED@host
bool redact_userinfo(std::string_view text, std::size_t& i, std::string& out) {
  if (text.substr(i, 3) != "://") return false;
  const std::size_t start = i + 3;
  std::size_t at = std::string_view::npos;
  for (std::size_t k = start; k < text.size() && !authority_end(text[k]); ++k) {
    if (text[k] == '@') at = k;
  }
  out.append("://");
  if (at != std::string_view::npos) out.append(kRedacted);
  i = at != std::string_view::npos ? at : start;  // continues with "@host" or the host
  return true;
}

// Where a header value echoed in prose, JSON or XML ends.
bool header_value_end(char c) {
  return c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '<';
}

// "Authorization: AWS4-HMAC-SHA256 ..." and the session-token header, as in a dumped request —
// also as a JSON key ("Authorization": "...") or with '=' ("Authorization=...").
bool redact_header(std::string_view text, std::size_t& i, std::string& out) {
  if (i > 0 && name_char(text[i - 1])) return false;
  for (std::string_view header : {std::string_view("authorization"),
                                  std::string_view("x-amz-security-token")}) {
    if (text.size() - i < header.size() || !iequals(text.substr(i, header.size()), header)) continue;
    std::size_t k = i + header.size();
    if (k < text.size() && (text[k] == '"' || text[k] == '\'')) ++k;
    while (k < text.size() && text[k] == ' ') ++k;
    if (k >= text.size() || (text[k] != ':' && text[k] != '=')) continue;
    ++k;
    while (k < text.size() && text[k] == ' ') ++k;
    if (k < text.size() && (text[k] == '"' || text[k] == '\'')) ++k;
    std::size_t end = k;
    while (end < text.size() && !header_value_end(text[end])) ++end;
    out.append(text.substr(i, k - i));
    if (end > k) out.append(kRedacted);
    i = end;
    return true;
  }
  return false;
}

// The value of an Authorization header echoed without its name (an S3-compatible server's error
// message or XML: "AWS4-HMAC-SHA256 Credential=AKIA.../aws4_request, SignedHeaders=...,
// Signature=..."; SigV2 "AWS AKIA...:sig"; "Bearer tok"): everything after the scheme word up
// to the end of the line, a quote or a tag.
bool redact_auth_scheme(std::string_view text, std::size_t& i, std::string& out) {
  if (i > 0 && name_char(text[i - 1])) return false;
  for (std::string_view scheme : {std::string_view("aws4-hmac-sha256 "),
                                  std::string_view("bearer "), std::string_view("aws ")}) {
    if (text.size() - i <= scheme.size() || !iequals(text.substr(i, scheme.size()), scheme)) continue;
    std::size_t k = i + scheme.size();
    if (scheme == "aws ") {  // only "AWS <key id>:<signature>", not the word AWS in prose
      std::size_t c = k;
      while (c < text.size() && std::isalnum(static_cast<unsigned char>(text[c]))) ++c;
      if (c - k < 16 || c >= text.size() || text[c] != ':') continue;
    }
    std::size_t end = k;
    while (end < text.size() && !header_value_end(text[end])) ++end;
    out.append(text.substr(i, k - i));
    out.append(kRedacted);
    i = end;
    return true;
  }
  return false;
}

// The parts of a SigV4 Authorization value on their own ("Credential=AKIA.../s3/aws4_request,",
// " Signature=9f..."), after a space, a comma, a quote or a tag — the query form (?X-Amz-...) is
// redact_query's.
bool redact_auth_part(std::string_view text, std::size_t& i, std::string& out) {
  if (i > 0 && name_char(text[i - 1])) return false;
  for (std::string_view part : {std::string_view("credential="), std::string_view("signature="),
                                std::string_view("x-amz-credential="),
                                std::string_view("x-amz-signature="),
                                std::string_view("x-amz-security-token=")}) {
    if (text.size() - i < part.size() || !iequals(text.substr(i, part.size()), part)) continue;
    std::size_t k = i + part.size();
    std::size_t end = k;
    while (end < text.size() && text[end] != ',' && text[end] != '&' && text[end] != ';' &&
           !header_value_end(text[end]) && !std::isspace(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    out.append(text.substr(i, k - i));
    if (end > k) out.append(kRedacted);
    i = end;
    return true;
  }
  return false;
}

// An AWS access key id on its own (AKIA/ASIA + 16 upper-case letters or digits).
bool redact_key_id(std::string_view text, std::size_t& i, std::string& out) {
  if (i > 0 && std::isalnum(static_cast<unsigned char>(text[i - 1]))) return false;
  if (text.size() - i < 20) return false;
  const std::string_view p = text.substr(i, 4);
  if (p != "AKIA" && p != "ASIA") return false;
  for (std::size_t k = i + 4; k < i + 20; ++k) {
    const char c = text[k];
    if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)))) {
      return false;
    }
  }
  if (i + 20 < text.size() && std::isalnum(static_cast<unsigned char>(text[i + 20]))) return false;
  out.append(kRedacted);
  i += 20;
  return true;
}

}  // namespace

std::string redact_secrets(std::string_view text) {
  // Fast path: nothing that can hold a secret.
  if (text.find_first_of("=@:") == std::string_view::npos &&
      text.find("KIA") == std::string_view::npos && text.find("SIA") == std::string_view::npos &&
      text.find("earer ") == std::string_view::npos &&
      text.find("EARER ") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (redact_query(text, i, out) || redact_userinfo(text, i, out) ||
        redact_header(text, i, out) || redact_auth_scheme(text, i, out) ||
        redact_auth_part(text, i, out) || redact_key_id(text, i, out)) {
      continue;
    }
    out.push_back(text[i++]);
  }
  return out;
}

}  // namespace stoker
