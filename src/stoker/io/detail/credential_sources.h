// The fetching half of each credential source (credentials.h chooses which one): an unsigned STS
// AssumeRoleWithWebIdentity, the container credentials endpoint, EC2 instance metadata (IMDSv2),
// a credential_process. Each runs on the calling thread, bounded in time and response size, and
// returns the credentials or an Error that names the source but never a secret, a token or a
// response body (parsers report which field is missing, not what they saw).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/io/credentials.h"

namespace stoker::io::detail {

struct WebIdentitySource {
  std::string token_file;    // read again at every fetch: EKS rotates it
  std::string role_arn;
  std::string session_name;
  std::string sts_url;       // "https://sts.REGION.amazonaws.com/" or an override
};
Result<AwsCredentials> fetch_web_identity(const WebIdentitySource& source);
// The <Credentials> of an AssumeRoleWithWebIdentityResponse.
Result<AwsCredentials> parse_sts_credentials(const std::string& xml);

struct ContainerSource {
  std::string url;
  std::string token;       // AWS_CONTAINER_AUTHORIZATION_TOKEN
  std::string token_file;  // AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (wins; read at every fetch)
};
// The endpoint the container variables name, checked as the SDKs do: the relative URI under
// http://169.254.170.2; a full URI over https, or over http to a loopback, ECS or EKS address.
Result<std::string> container_url(const std::string& relative_uri, const std::string& full_uri);
Result<AwsCredentials> fetch_container(const ContainerSource& source);

struct ImdsSource {
  std::string endpoint;  // "http://169.254.169.254" unless AWS_EC2_METADATA_SERVICE_ENDPOINT
};
Result<AwsCredentials> fetch_imds(const ImdsSource& source);

// Container and IMDS JSON ({AccessKeyId, SecretAccessKey, Token, Expiration}); credential_process
// JSON ({Version: 1, AccessKeyId, SecretAccessKey, SessionToken?, Expiration?}).
Result<AwsCredentials> parse_json_credentials(const std::string& json, const std::string& what);
Result<AwsCredentials> parse_process_credentials(const std::string& json);

struct ProcessSource {
  std::string command;   // as written in the profile; split like a POSIX shell, run without one
  std::string profile;   // for messages
  std::chrono::milliseconds timeout{60000};
  std::size_t max_output = 64 * 1024;
};
// Runs the command (stdin inherited, stderr discarded: it may echo secrets), reads stdout up to
// the cap, kills the process group past the timeout or the cap.
Result<AwsCredentials> run_credential_process(const ProcessSource& source);
// Word splitting exactly as Python's shlex.split (botocore's compat_shell_split on POSIX): '…'
// literal, "…" where a backslash escapes only " and \, a bare backslash escapes any character.
Result<std::vector<std::string>> shell_split(const std::string& command);

// `text` with every occurrence of each non-empty secret replaced by "REDACTED" — the known values
// (a token we sent), where base/redact.h catches secrets by their shape in URLs and headers.
std::string redact(std::string text, const std::vector<std::string>& secrets);

}  // namespace stoker::io::detail
