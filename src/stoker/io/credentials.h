// CredentialProvider: the keys that sign S3 requests, resolved in the order of botocore's default
// chain (credentials.py create_credential_resolver) for the sources stoker supports:
//   environment (AWS_ACCESS_KEY_ID…) → assume-role-with-web-identity (AWS_WEB_IDENTITY_TOKEN_FILE +
//   AWS_ROLE_ARN, or the profile's web_identity_token_file/role_arn; unsigned STS call) → the
//   profile in ~/.aws/credentials → its credential_process → the profile in ~/.aws/config →
//   container endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI) → EC2 instance
//   metadata (IMDSv2; only when opted in) → anonymous.
// The source is chosen once, from configuration alone (no network, no process); the first
// fetch happens at the first S3 request. Temporary credentials are refreshed on the calling thread
// when less than `refresh_window` is left, one refresh at a time; a failed refresh keeps the old
// credentials while they are valid. Thread-safe; get() is a mutex + shared_ptr copy when cached.
// Errors: InvalidArgument (misconfiguration), Unimplemented (assume-role via source_profile, SSO),
// PermissionDenied / Unavailable (fetch failed, nothing valid left). No message holds a secret.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "stoker/base/result.h"
#include "stoker/io/aws_config.h"

namespace stoker::io {

struct AwsCredentials {
  std::string access_key_id;  // "" = anonymous (requests go unsigned)
  std::string secret_access_key;
  std::string session_token;
  // Temporary credentials expire; nullopt = static keys, never refreshed.
  std::optional<std::chrono::system_clock::time_point> expiration;

  bool anonymous() const { return access_key_id.empty(); }
  // For logs: the key id's first 4 characters and the expiry; never the secret or the token.
  std::string to_string() const;
};

class CredentialProvider {
 public:
  virtual ~CredentialProvider();
  // Valid credentials, refreshed first when needed (may block the caller on a network call or
  // a credential_process, within the source's timeouts).
  virtual Result<std::shared_ptr<const AwsCredentials>> get() = 0;
  // Where the credentials come from, e.g. "web identity (role arn:aws:iam::1:role/r)".
  virtual std::string source() const = 0;
};

struct CredentialOptions {
  // Refresh temporary credentials when less than this is left (the SDKs use 5 to 15 minutes).
  std::chrono::milliseconds refresh_window = std::chrono::minutes(5);
  // After a refresh inside the window (failed, or one that brought credentials already inside it),
  // the next try waits this long — while the old credentials are valid. Expired: no wait.
  std::chrono::milliseconds refresh_retry = std::chrono::seconds(10);
  // credential_process: wall-clock limit and stdout cap (the process is killed past either).
  std::chrono::milliseconds process_timeout = std::chrono::seconds(60);
  std::size_t process_max_output = 64 * 1024;
  // Test hook: the wall clock used for expiry decisions.
  std::function<std::chrono::system_clock::time_point()> clock;
};

// The default chain over `env` (HOME and AWS_* as in load_aws_config) and the shared files;
// `aws` supplies the region (STS endpoint). Chooses the source now; fetches later.
// `imds`: EC2 instance metadata is a source only when true or when
// $AWS_EC2_METADATA_SERVICE_ENDPOINT is set (also its endpoint); $AWS_EC2_METADATA_DISABLED=true
// turns it off. Otherwise stoker never contacts the link-local metadata address.
Result<std::shared_ptr<CredentialProvider>> make_default_credentials(
    const EnvLookup& env, const AwsConfig& aws, bool imds, const CredentialOptions& options = {});

// Fixed keys (or anonymous when `aws` has none): what an explicit StoreOptions::aws means.
std::shared_ptr<CredentialProvider> make_static_credentials(const AwsConfig& aws);

// A provider over any fetch function (tests, embedders): cached and refreshed like the chain's.
std::shared_ptr<CredentialProvider> make_refreshing_credentials(
    std::string source, std::function<Result<AwsCredentials>()> fetch,
    const CredentialOptions& options = {});

// "2024-05-01T12:00:00Z", "…T12:00:00.123+02:00", "…T12:00:00+0000" → UTC time point; nullopt
// for anything else, and for years outside 1970..2261 (what the clock can hold).
std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text);

}  // namespace stoker::io
