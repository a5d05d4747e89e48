#include "stoker/io/credentials.h"

#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "stoker/io/detail/credential_sources.h"

namespace stoker::io {
namespace {

using SysClock = std::chrono::system_clock;

// An environment variable or a profile key ("" when absent): both are string maps.
std::string get(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

std::string format_utc(SysClock::time_point t) {
  const std::time_t tt = SysClock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class StaticProvider final : public CredentialProvider {
 public:
  StaticProvider(std::string source, AwsCredentials c)
      : source_(std::move(source)), creds_(std::make_shared<const AwsCredentials>(std::move(c))) {}
  Result<std::shared_ptr<const AwsCredentials>> get() override { return creds_; }
  std::string source() const override { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const AwsCredentials> creds_;
};

// Caches what `fetch` returns and fetches again inside the refresh window. One fetch at a time:
// while it runs, callers holding still-valid credentials get them at once; callers without valid
// ones wait for it and share its outcome.
class RefreshingProvider final : public CredentialProvider {
 public:
  RefreshingProvider(std::string source, std::function<Result<AwsCredentials>()> fetch,
                     CredentialOptions options)
      : source_(std::move(source)), fetch_(std::move(fetch)), options_(std::move(options)) {}

  Result<std::shared_ptr<const AwsCredentials>> get() override {
    std::unique_lock lock(mu_);
    const SysClock::time_point now = clock();
    if (valid(now)) {
      const bool in_window = cached_->expiration && *cached_->expiration - now <= options_.refresh_window;
      const bool tried_lately = attempted_ && now - last_attempt_ < options_.refresh_retry;
      if (!in_window || refreshing_ || tried_lately) return cached_;
    } else if (refreshing_) {
      const std::uint64_t seen = generation_;
      cv_.wait(lock, [&] { return generation_ != seen; });
      if (valid(clock())) return cached_;
      return failure();
    }
    refreshing_ = true;
    lock.unlock();
    Result<AwsCredentials> fresh = fetch_guarded();
    if (fresh.ok() && fresh->expiration && *fresh->expiration <= clock()) {
      fresh = unavailable("the source handed out credentials that expired at " +
                          format_utc(*fresh->expiration) + " (is the clock right?)");
    }
    lock.lock();
    refreshing_ = false;
    ++generation_;
    attempted_ = true;
    last_attempt_ = clock();
    cv_.notify_all();
    if (fresh.ok()) {
      cached_ = std::make_shared<const AwsCredentials>(std::move(*fresh));
      last_error_.reset();
      return cached_;
    }
    last_error_ = std::move(fresh).error();
    if (valid(clock())) return cached_;  // a failed refresh: the old keys serve until expiry
    return failure();
  }

  std::string source() const override { return source_; }

 private:
  SysClock::time_point clock() const { return options_.clock ? options_.clock() : SysClock::now(); }

  bool valid(SysClock::time_point now) const {
    return cached_ && (!cached_->expiration || now < *cached_->expiration);
  }

  Result<AwsCredentials> fetch_guarded() {
    try {
      return fetch_();
    } catch (const std::exception& e) {  // third-party code below us must not unwind through
      return internal_error(std::string("credential fetch threw: ") + e.what());
    } catch (...) {
      return internal_error("credential fetch threw");
    }
  }

  // Nothing valid to hand out: the last fetch's error, as PermissionDenied (the service said no)
  // or Unavailable (we could not get an answer).
  Error failure() const {
    const Error last = last_error_ ? *last_error_ : unavailable("no credentials");
    std::string msg = "S3 credentials from " + source_;
    if (cached_ && cached_->expiration)
      msg += " expired at " + format_utc(*cached_->expiration) + " and could not be refreshed";
    msg += ": " + last.to_string();
    return Error(last.code() == ErrorCode::kPermissionDenied ? ErrorCode::kPermissionDenied
                                                             : ErrorCode::kUnavailable,
                 std::move(msg));
  }

  const std::string source_;
  const std::function<Result<AwsCredentials>()> fetch_;
  const CredentialOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const AwsCredentials> cached_;  // guarded by mu_, like everything below
  std::optional<Error> last_error_;
  bool refreshing_ = false;
  bool attempted_ = false;
  SysClock::time_point last_attempt_{};
  std::uint64_t generation_ = 0;  // fetches finished
};

Result<AwsCredentials> static_keys(const std::map<std::string, std::string>& section,
                                   const std::string& where) {
  AwsCredentials c;
  c.access_key_id = get(section, "aws_access_key_id");
  c.secret_access_key = get(section, "aws_secret_access_key");
  c.session_token = get(section, "aws_session_token");
  if (c.secret_access_key.empty()) return invalid_argument(where + " has a key id but no secret");
  return c;
}

std::string sts_url(const EnvLookup& env, const std::string& region) {
  std::string url = get(env, "AWS_ENDPOINT_URL_STS");
  if (url.empty()) url = get(env, "AWS_ENDPOINT_URL");
  if (url.empty()) {
    const bool china = region.rfind("cn-", 0) == 0;
    url = "https://sts." + region + (china ? ".amazonaws.com.cn" : ".amazonaws.com");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/";
}

bool imds_enabled(const EnvLookup& env, bool imds) {
  std::string disabled = get(env, "AWS_EC2_METADATA_DISABLED");
  for (char& c : disabled) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (disabled == "true") return false;
  return imds || !get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT").empty();
}

std::string imds_endpoint(const EnvLookup& env) {
  std::string ep = get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (ep.empty()) {
    std::string mode = get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    for (char& c : mode) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ep = mode == "ipv6" ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
  }
  while (!ep.empty() && ep.back() == '/') ep.pop_back();
  return ep;
}

}  // namespace

CredentialProvider::~CredentialProvider() = default;

std::string AwsCredentials::to_string() const {
  if (anonymous()) return "key=(anonymous)";
  std::string s = "key=" + access_key_id.substr(0, 4) + "…";
  if (!session_token.empty()) s += " session";
  if (expiration) s += " expires=" + format_utc(*expiration);
  return s;
}

std::optional<SysClock::time_point> parse_iso8601(const std::string& text) {
  int y, mo, d, h, mi, s, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 ||
      used != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
      mi > 59 || s < 0 || s > 60) {
    return std::nullopt;
  }
  // system_clock counts nanoseconds in 64 bits: years past 2262 overflow it (found by the fuzzer:
  // an Expiration of 6744-01-01 was signed overflow in the conversion). No credential expires
  // before 1970 or after 2261.
  if (y < 1970 || y > 2261) return std::nullopt;
  std::size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  }
  long offset = 0;  // seconds east of UTC
  const std::string zone = text.substr(i);
  if (zone == "Z" || zone == "z") {
    // UTC
  } else if ((zone.size() == 6 && zone[3] == ':') || zone.size() == 5) {
    if (zone[0] != '+' && zone[0] != '-') return std::nullopt;
    const std::string hh = zone.substr(1, 2), mm = zone.substr(zone.size() - 2);
    for (char c : hh + mm) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    offset = (std::stol(hh) * 3600 + std::stol(mm) * 60) * (zone[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return SysClock::from_time_t(timegm(&tm) - offset);
}

std::shared_ptr<CredentialProvider> make_static_credentials(const AwsConfig& aws) {
  AwsCredentials c{aws.access_key_id, aws.secret_access_key, aws.session_token, std::nullopt};
  return std::make_shared<StaticProvider>(c.anonymous() ? "anonymous" : "explicit keys", c);
}

std::shared_ptr<CredentialProvider> make_refreshing_credentials(
    std::string source, std::function<Result<AwsCredentials>()> fetch,
    const CredentialOptions& options) {
  return std::make_shared<RefreshingProvider>(std::move(source), std::move(fetch), options);
}

namespace {

using Ptr = std::shared_ptr<CredentialProvider>;

// Each step of the chain: a provider, nullptr when its source is not configured, or an error when
// it is configured wrongly.
Result<Ptr> from_web_identity(const EnvLookup& env, const std::map<std::string, std::string>& merged,
                              const AwsConfig& aws, const CredentialOptions& options) {
  std::string token_file = get(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
  if (token_file.empty()) token_file = get(merged, "web_identity_token_file");
  if (token_file.empty()) return Ptr();
  // Key by key, the variable before the profile (botocore's _get_config).
  detail::WebIdentitySource src{token_file, get(env, "AWS_ROLE_ARN"),
                                get(env, "AWS_ROLE_SESSION_NAME"), sts_url(env, aws.region)};
  if (src.role_arn.empty()) src.role_arn = get(merged, "role_arn");
  if (src.role_arn.empty())
    return invalid_argument("a web identity token file is configured but no role ARN "
                            "(AWS_ROLE_ARN or the profile's role_arn)");
  if (src.session_name.empty()) src.session_name = get(merged, "role_session_name");
  if (src.session_name.empty())
    src.session_name = "stoker-session-" + std::to_string(SysClock::to_time_t(SysClock::now()));
  return make_refreshing_credentials("web identity (role " + src.role_arn + ")",
                                     [src] { return detail::fetch_web_identity(src); }, options);
}

// Shared credentials file, then credential_process (either file), then the config file.
Result<Ptr> from_profile(const AwsProfile& files, const std::map<std::string, std::string>& merged,
                         const CredentialOptions& options) {
  const std::string profile = "profile '" + files.name + "'";
  if (!get(files.credentials_file, "aws_access_key_id").empty()) {
    const std::string where = profile + " in the shared credentials file";
    STOKER_ASSIGN_OR_RETURN(AwsCredentials c, static_keys(files.credentials_file, where));
    return Ptr(std::make_shared<StaticProvider>(where, std::move(c)));
  }
  if (std::string command = get(merged, "credential_process"); !command.empty()) {
    detail::ProcessSource src{command, files.name, options.process_timeout,
                              options.process_max_output};
    return make_refreshing_credentials("credential_process of " + profile,
                                       [src] { return detail::run_credential_process(src); },
                                       options);
  }
  if (!get(files.config_file, "aws_access_key_id").empty()) {
    const std::string where = profile + " in the config file";
    STOKER_ASSIGN_OR_RETURN(AwsCredentials c, static_keys(files.config_file, where));
    return Ptr(std::make_shared<StaticProvider>(where, std::move(c)));
  }
  return Ptr();
}

Result<Ptr> from_container(const EnvLookup& env, const CredentialOptions& options) {
  const std::string relative = get(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string full = get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (relative.empty() && full.empty()) return Ptr();
  STOKER_ASSIGN_OR_RETURN(std::string url, detail::container_url(relative, full));
  detail::ContainerSource src{url, get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN"),
                              get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")};
  return make_refreshing_credentials("container endpoint " + url,
                                     [src] { return detail::fetch_container(src); }, options);
}

}  // namespace

// botocore's default chain (credentials.py create_credential_resolver), less the sources stoker
// lacks: env → assume-role (refused: unsupported) → web identity → SSO (refused) → shared
// credentials file → credential_process → config file → container → IMDS (opt-in) → anonymous.
// A source that is configured is the source: a failing fetch is an error, not a fall-through.
Result<std::shared_ptr<CredentialProvider>> make_default_credentials(
    const EnvLookup& env, const AwsConfig& aws, bool imds, const CredentialOptions& options) {
  if (!get(env, "AWS_ACCESS_KEY_ID").empty()) {
    AwsCredentials c{get(env, "AWS_ACCESS_KEY_ID"), get(env, "AWS_SECRET_ACCESS_KEY"),
                     get(env, "AWS_SESSION_TOKEN"), std::nullopt};
    if (c.secret_access_key.empty())
      return invalid_argument("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    return Ptr(std::make_shared<StaticProvider>("environment", std::move(c)));
  }
  const AwsProfile files = load_aws_profile(env);
  const auto merged = files.merged();
  const std::string profile = "profile '" + files.name + "'";
  if (!get(merged, "role_arn").empty() && get(merged, "web_identity_token_file").empty() &&
      (!get(merged, "source_profile").empty() || !get(merged, "credential_source").empty())) {
    return unimplemented(profile + " assumes a role through source_profile/credential_source, "
                         "which stoker does not support (use web identity or credential_process)");
  }
  STOKER_ASSIGN_OR_RETURN(Ptr web, from_web_identity(env, merged, aws, options));
  if (web) return web;
  if (!get(merged, "sso_start_url").empty() || !get(merged, "sso_session").empty())
    return unimplemented(profile + " uses AWS SSO, which stoker does not support");
  STOKER_ASSIGN_OR_RETURN(Ptr from_files, from_profile(files, merged, options));
  if (from_files) return from_files;
  STOKER_ASSIGN_OR_RETURN(Ptr container, from_container(env, options));
  if (container) return container;
  if (imds_enabled(env, imds)) {
    detail::ImdsSource src{imds_endpoint(env)};
    return make_refreshing_credentials("EC2 instance metadata at " + src.endpoint,
                                       [src] { return detail::fetch_imds(src); }, options);
  }
  return Ptr(std::make_shared<StaticProvider>("anonymous", AwsCredentials{}));
}

}  // namespace stoker::io
