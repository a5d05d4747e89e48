#include "stoker/io/detail/credential_sources.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "stoker/base/redact.h"
#include "stoker/io/detail/blocking_http.h"
#include "stoker/io/detail/text.h"
#include "stoker/io/http_client.h"

namespace stoker::io::detail {
namespace {

constexpr std::size_t kMaxTokenFileBytes = 64 * 1024;

// A small file holding a token: whole (web identity: sent as is) or trimmed (container).
Result<std::string> read_token_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(what + ": cannot read the token file " + path);
  std::string text(kMaxTokenFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxTokenFileBytes) return invalid_argument(what + ": token file too large");
  if (text.empty()) return invalid_argument(what + ": the token file " + path + " is empty");
  return text;
}

std::string json_string_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Fills an AwsCredentials from a parsed JSON object; `token_key` names the session token.
Result<AwsCredentials> credentials_from_json(const nlohmann::json& j, const char* token_key,
                                             bool expiration_required, const std::string& what) {
  AwsCredentials c;
  c.access_key_id = json_string_field(j, "AccessKeyId");
  c.secret_access_key = json_string_field(j, "SecretAccessKey");
  c.session_token = json_string_field(j, token_key);
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    return data_loss(what + ": the response lacks AccessKeyId or SecretAccessKey");
  const std::string expiration = json_string_field(j, "Expiration");
  if (!expiration.empty()) {
    c.expiration = parse_iso8601(expiration);
    if (!c.expiration) return data_loss(what + ": Expiration is not an ISO 8601 time");
  } else if (expiration_required) {
    return data_loss(what + ": the response lacks Expiration");
  }
  return c;
}

bool is_loopback_or_container_host(std::string host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, host.c_str(), &a6) != 1) return false;
    static in6_addr eks{};
    inet_pton(AF_INET6, "fd00:ec2::23", &eks);
    return IN6_IS_ADDR_LOOPBACK(&a6) || std::memcmp(&a6, &eks, sizeof a6) == 0;
  }
  if (host == "localhost") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) != 1) return false;  // names: no DNS lookups here
  const std::uint32_t ip = ntohl(a4.s_addr);
  return (ip >> 24) == 127 || host == "169.254.170.2" || host == "169.254.170.23";
}

}  // namespace

std::string redact(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& s : secrets) {
    if (s.empty()) continue;
    for (std::size_t at = text.find(s); at != std::string::npos;
         at = text.find(s, at + kRedacted.size()))  // past the mark: a secret may be part of it
      text.replace(at, s.size(), kRedacted);
  }
  return text;
}

Result<AwsCredentials> parse_sts_credentials(const std::string& xml) {
  const std::string block = xml_text(xml, "Credentials");
  AwsCredentials c;
  c.access_key_id = xml_text(block, "AccessKeyId");
  c.secret_access_key = xml_text(block, "SecretAccessKey");
  c.session_token = xml_text(block, "SessionToken");
  if (c.access_key_id.empty() || c.secret_access_key.empty() || c.session_token.empty())
    return data_loss("STS response lacks AccessKeyId, SecretAccessKey or SessionToken");
  c.expiration = parse_iso8601(xml_text(block, "Expiration"));
  if (!c.expiration) return data_loss("STS response lacks an ISO 8601 Expiration");
  return c;
}

Result<AwsCredentials> fetch_web_identity(const WebIdentitySource& source) {
  const std::string what = "web identity (role " + source.role_arn + ")";
  STOKER_ASSIGN_OR_RETURN(std::string token, read_token_file(source.token_file, what));
  BlockingHttpRequest req;
  req.method = "POST";
  req.url = source.sts_url;
  req.display = "STS AssumeRoleWithWebIdentity at " + source.sts_url;
  req.headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                 "Accept: text/xml"};
  // Unsigned on purpose: the web identity token is the proof of identity.
  req.body = "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" +
             percent_encode(source.role_arn, false) + "&RoleSessionName=" +
             percent_encode(source.session_name, false) +
             "&WebIdentityToken=" + percent_encode(token, false);
  req.total_timeout = std::chrono::seconds(10);
  std::string error_body;
  Result<BlockingHttpResponse> resp = blocking_http(req, &error_body);
  if (!resp.ok()) {
    auto [code, message] = parse_xml_error(error_body);
    std::string msg = resp.error().to_string();
    if (!code.empty()) msg += " " + code;
    if (!message.empty()) msg += ": " + message;
    // STS refusing the token or the role (InvalidIdentityToken, ExpiredTokenException,
    // AccessDenied... are 400s and 403s) is a permission problem, not bad input of ours.
    ErrorCode ec = resp.error().code();
    if (!code.empty() && (ec == ErrorCode::kInvalidArgument || ec == ErrorCode::kNotFound))
      ec = ErrorCode::kPermissionDenied;
    // STS may quote what it was sent; the token must not travel on in our message.
    return Error(ec, redact(msg, {token, percent_encode(token, false)}));
  }
  Result<AwsCredentials> c = parse_sts_credentials(resp->body);
  if (!c.ok()) return std::move(c).error().with_context(what);
  return c;
}

Result<std::string> container_url(const std::string& relative_uri, const std::string& full_uri) {
  if (!relative_uri.empty()) {
    if (relative_uri.front() != '/')
      return invalid_argument("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI must start with '/'");
    return "http://169.254.170.2" + relative_uri;
  }
  const std::size_t scheme_end = full_uri.find("://");
  if (scheme_end == std::string::npos)
    return invalid_argument("AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL: " + full_uri);
  const std::string scheme = full_uri.substr(0, scheme_end);
  if (scheme == "https") return full_uri;
  std::string authority = full_uri.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (authority.find('@') != std::string::npos)
    return invalid_argument("AWS_CONTAINER_CREDENTIALS_FULL_URI must not hold user info");
  std::string host = authority;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (scheme != "http" || !is_loopback_or_container_host(host)) {
    return invalid_argument("AWS_CONTAINER_CREDENTIALS_FULL_URI " + full_uri +
                            ": must be https, or http to a loopback, ECS (169.254.170.2) or "
                            "EKS (169.254.170.23, fd00:ec2::23) address");
  }
  return full_uri;
}

Result<AwsCredentials> fetch_container(const ContainerSource& source) {
  const std::string what = "container credentials at " + source.url;
  std::string token = source.token;
  if (!source.token_file.empty()) {
    STOKER_ASSIGN_OR_RETURN(token, read_token_file(source.token_file, what));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
  }
  for (unsigned char c : token) {
    if (c < 0x20 || c == 0x7f)  // a header value may not carry a line break (header injection)
      return invalid_argument(what + ": the authorization token holds a control character");
  }
  BlockingHttpRequest req;
  req.url = source.url;
  req.display = "GET " + source.url;
  req.headers = {"Accept: application/json"};
  if (!token.empty()) req.headers.push_back("Authorization: " + token);
  req.no_proxy = true;
  req.attempts = 3;
  STOKER_ASSIGN_OR_RETURN(BlockingHttpResponse resp, blocking_http(req));
  return parse_json_credentials(resp.body, what);
}

Result<AwsCredentials> fetch_imds(const ImdsSource& source) {
  const std::string what = "EC2 instance metadata at " + source.endpoint;
  BlockingHttpRequest put;
  put.method = "PUT";
  put.url = source.endpoint + "/latest/api/token";
  put.display = "PUT " + put.url;
  put.headers = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"};
  put.no_proxy = true;
  put.connect_timeout = std::chrono::seconds(1);
  put.total_timeout = std::chrono::seconds(2);
  STOKER_ASSIGN_OR_RETURN(BlockingHttpResponse token, blocking_http(put));
  if (token.body.empty() || token.body.find_first_of("\r\n") != std::string::npos)
    return data_loss(what + ": IMDSv2 token response is not a single token");

  BlockingHttpRequest get = put;
  get.method = "GET";
  get.headers = {"X-aws-ec2-metadata-token: " + token.body};
  get.url = source.endpoint + "/latest/meta-data/iam/security-credentials/";
  get.display = "GET " + get.url;
  STOKER_ASSIGN_OR_RETURN(BlockingHttpResponse roles, blocking_http(get));
  std::string role = roles.body.substr(0, roles.body.find_first_of("\r\n"));
  for (char c : role) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("+=,.@_-").find(c) == std::string_view::npos)
      return data_loss(what + ": the instance profile's role name is malformed");
  }
  if (role.empty()) return not_found(what + ": the instance has no IAM role attached");
  get.url += role;
  get.display = "GET " + get.url;
  STOKER_ASSIGN_OR_RETURN(BlockingHttpResponse body, blocking_http(get));
  return parse_json_credentials(body.body, what);
}

Result<AwsCredentials> parse_json_credentials(const std::string& json, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return data_loss(what + ": the response is not a JSON object");
  const std::string code = json_string_field(j, "Code");
  if (!code.empty() && code != "Success")
    return unavailable(what + ": the service answered Code " + code);
  return credentials_from_json(j, "Token", /*expiration_required=*/true, what);
}

Result<AwsCredentials> parse_process_credentials(const std::string& json) {
  const std::string what = "credential_process output";
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return data_loss(what + " is not a JSON object");
  auto version = j.find("Version");
  if (version == j.end() || !version->is_number_integer() || version->get<long long>() != 1)
    return data_loss(what + ": Version must be 1");
  return credentials_from_json(j, "SessionToken", /*expiration_required=*/false, what);
}

}  // namespace stoker::io::detail
