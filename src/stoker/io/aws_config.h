// AwsConfig: what an S3 request needs besides the URI — region, endpoint, addressing style and
// static credentials — resolved the way the AWS CLI and SDKs do. open_store() signs with the full
// credential chain of credentials.h instead (web identity, credential_process, container, IMDS,
// refresh); the static keys here are what an explicit StoreOptions::aws carries.
//   static credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//     profile (AWS_PROFILE, default "default") in ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE),
//     else that profile in ~/.aws/config (AWS_CONFIG_FILE; "[profile NAME]" sections);
//   region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else "us-east-1";
//   endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`; a custom
//     endpoint means an S3-compatible store and implies path-style addressing.
// No credentials at all is allowed (anonymous requests to public buckets). Plain value.
// The secret never leaves this struct except into libcurl's signer: to_string() redacts it.
#pragma once

#include <map>
#include <string>

#include "stoker/base/result.h"

namespace stoker::io {

struct AwsConfig {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string region = "us-east-1";
  std::string endpoint;     // "" = https://s3.REGION.amazonaws.com (virtual-hosted style)
  bool path_style = false;  // bucket in the path, not the host name

  bool has_credentials() const { return !access_key_id.empty(); }
  // For logs: the key id's first 4 characters, never the secret or the token.
  std::string to_string() const;
};

// An environment lookup, so tests can resolve against a fake environment.
using EnvLookup = std::map<std::string, std::string>;

// HOME and every AWS_* variable of this process.
EnvLookup aws_environment();

// The selected profile (AWS_PROFILE, else "default") in both shared files.
struct AwsProfile {
  std::string name;
  std::map<std::string, std::string> credentials_file;  // [NAME] of ~/.aws/credentials
  std::map<std::string, std::string> config_file;       // [profile NAME] / [default] of ~/.aws/config
  // botocore's "full config" view: the config profile, overlaid with the credentials profile.
  std::map<std::string, std::string> merged() const;
};
AwsProfile load_aws_profile(const EnvLookup& env);

// From the real process environment and files.
Result<AwsConfig> load_aws_config();
// From `env` only (HOME in it locates ~/.aws); for tests.
Result<AwsConfig> load_aws_config(const EnvLookup& env);

// INI parsing as the AWS CLI does it: "[section]", "key = value", '#' and ';' comments.
std::map<std::string, std::map<std::string, std::string>> parse_ini(const std::string& text);

}  // namespace stoker::io
