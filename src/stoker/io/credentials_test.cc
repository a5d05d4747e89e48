// Unit tests of the credential chain that need no server: which source the chain picks from a
// fake environment and profile files (nothing is fetched), the parsers of STS / container / IMDS /
// credential_process answers, the container URL rules, the refresh policy under a fake clock, and
// credential_process against small local scripts. Servers are in tests/io/test_credentials.py.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <latch>
#include <thread>

#include <gtest/gtest.h>

#include "stoker/io/credentials.h"
#include "stoker/io/detail/credential_sources.h"

namespace stoker::io {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("stoker_cred_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// Expected times from the C++20 calendar (days from the civil date, std::chrono's own
// arithmetic), not from timegm — the recipe parse_iso8601 uses — so a shared mistake cannot
// hide; the helper itself is pinned to epoch seconds computed outside C++ below.
SysClock::time_point utc(int y, int mo, int d, int h, int mi, int s) {
  const std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{static_cast<unsigned>(mo)} /
                                  std::chrono::day{static_cast<unsigned>(d)}};
  return SysClock::time_point(day) + std::chrono::hours{h} + std::chrono::minutes{mi} +
         std::chrono::seconds{s};
}

TEST(Iso8601Test, TheExpectedTimesAreTheEpochSecondsComputedElsewhere) {
  // Python's calendar.timegm and `date -u -d ... +%s` agree on these.
  using std::chrono::seconds;
  EXPECT_EQ(utc(2024, 5, 1, 12, 0, 0).time_since_epoch(), seconds{1714564800});
  EXPECT_EQ(utc(2023, 12, 31, 23, 59, 59).time_since_epoch(), seconds{1704067199});
  EXPECT_EQ(utc(2030, 1, 1, 0, 0, 0).time_since_epoch(), seconds{1893456000});
  EXPECT_EQ(utc(2261, 12, 31, 23, 59, 59).time_since_epoch(), seconds{9214646399});
}

TEST(Iso8601Test, ParsesUtcOffsetsAndFractions) {
  EXPECT_EQ(parse_iso8601("2024-05-01T12:00:00Z"), utc(2024, 5, 1, 12, 0, 0));
  EXPECT_EQ(parse_iso8601("2024-05-01T12:00:00.123456Z"), utc(2024, 5, 1, 12, 0, 0));
  EXPECT_EQ(parse_iso8601("2024-05-01T14:30:00+02:30"), utc(2024, 5, 1, 12, 0, 0));
  EXPECT_EQ(parse_iso8601("2024-05-01T07:00:00-0500"), utc(2024, 5, 1, 12, 0, 0));
  EXPECT_EQ(parse_iso8601("2023-12-31T23:59:59+00:00"), utc(2023, 12, 31, 23, 59, 59));
  for (const char* bad : {"", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T00:00:00Z",
                          "2024-05-01T12:00:00Zjunk", "2024-05-01T12:00:00+2:00", "tomorrow"}) {
    EXPECT_FALSE(parse_iso8601(bad).has_value()) << bad;
  }
}

// Fuzzer finding (src/stoker/fuzz, target xml): a year the nanosecond clock cannot hold was
// signed overflow; such an Expiration is now not a time, so the response is refused.
TEST(Iso8601Test, RefusesYearsTheClockCannotHold) {
  for (const char* bad : {"6744-01-01T00:00:00Z", "2262-04-12T00:00:00Z", "1677-01-01T00:00:00Z",
                          "-999-01-01T00:00:00Z", "2024-05-01T-1:00:00Z"}) {
    EXPECT_FALSE(parse_iso8601(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_iso8601("2261-12-31T23:59:59Z"), utc(2261, 12, 31, 23, 59, 59));
  auto sts = detail::parse_sts_credentials(
      "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
      "<SessionToken>T</SessionToken><Expiration>6744-01-01T00:00:00Z</Expiration></Credentials>");
  ASSERT_FALSE(sts.ok());
  EXPECT_EQ(sts.error().code(), ErrorCode::kDataLoss);
}

TEST(ShellSplitTest, SplitsLikePosixShlex) {
  // Expected words as Python's shlex.split(posix=True) gives them.
  using V = std::vector<std::string>;
  EXPECT_EQ(*detail::shell_split("  /bin/helper --profile  x "), (V{"/bin/helper", "--profile", "x"}));
  EXPECT_EQ(*detail::shell_split("a 'b c' \"d \\\"e\\\" \\$f \\n\""), (V{"a", "b c", "d \"e\" \\$f \\n"}));
  EXPECT_EQ(*detail::shell_split("a\\\nb \"x\\\ny\" a#b \"\\\\\""), (V{"a\nb", "x\\\ny", "a#b", "\\"}));
  EXPECT_EQ(*detail::shell_split("a\\ b c''d \"\""), (V{"a b", "cd", ""}));
  EXPECT_EQ(*detail::shell_split("'it'\\''s'"), (V{"it's"}));
  EXPECT_TRUE(detail::shell_split("")->empty());
  EXPECT_EQ(detail::shell_split("a 'b").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(detail::shell_split("a \"b").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(detail::shell_split("a\\").error().code(), ErrorCode::kInvalidArgument);
}

TEST(CredentialParsingTest, StsResponse) {
  const std::string xml =
      "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
      "<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>x</SubjectFromWebIdentityToken>"
      "<Credentials><SessionToken>FQo+/=Tok&amp;en</SessionToken>"
      "<SecretAccessKey>wJal/rXUtn</SecretAccessKey><Expiration>2024-05-01T12:00:00Z</Expiration>"
      "<AccessKeyId>ASIAEXAMPLE</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult>"
      "</AssumeRoleWithWebIdentityResponse>";
  auto c = detail::parse_sts_credentials(xml);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->access_key_id, "ASIAEXAMPLE");
  EXPECT_EQ(c->secret_access_key, "wJal/rXUtn");
  EXPECT_EQ(c->session_token, "FQo+/=Tok&en");
  EXPECT_EQ(c->expiration, utc(2024, 5, 1, 12, 0, 0));
  auto missing = detail::parse_sts_credentials("<Credentials><AccessKeyId>A</AccessKeyId>"
                                               "<SecretAccessKey>SECRETX</SecretAccessKey>"
                                               "</Credentials>");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(missing.error().to_string().find("SECRETX"), std::string::npos);
}

TEST(CredentialParsingTest, ContainerImdsAndProcessJson) {
  auto c = detail::parse_json_credentials(
      R"({"Code":"Success","AccessKeyId":"ASIA1","SecretAccessKey":"S1","Token":"T1",)"
      R"("Expiration":"2024-05-01T12:00:00Z"})", "container");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->session_token, "T1");
  EXPECT_EQ(c->expiration, utc(2024, 5, 1, 12, 0, 0));
  EXPECT_EQ(detail::parse_json_credentials(R"({"AccessKeyId":"A","SecretAccessKey":"S"})", "x")
                .error().code(), ErrorCode::kDataLoss);  // temporary credentials need Expiration
  EXPECT_FALSE(detail::parse_json_credentials(R"({"Code":"Failure","AccessKeyId":"A"})", "x").ok());
  EXPECT_FALSE(detail::parse_json_credentials("not json SECRETX", "x").ok());
  EXPECT_EQ(detail::parse_json_credentials("not json SECRETX", "x").error().to_string().find("SECRETX"),
            std::string::npos);

  auto p = detail::parse_process_credentials(
      R"({"Version":1,"AccessKeyId":"AKP","SecretAccessKey":"SP","SessionToken":"TP",)"
      R"("Expiration":"2024-05-01T12:00:00+00:00"})");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->access_key_id, "AKP");
  EXPECT_EQ(p->session_token, "TP");
  auto forever = detail::parse_process_credentials(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"})");
  ASSERT_TRUE(forever.ok());
  EXPECT_FALSE(forever->expiration.has_value());  // no Expiration: valid until the run ends
  EXPECT_FALSE(detail::parse_process_credentials(R"({"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"})").ok());
  EXPECT_FALSE(detail::parse_process_credentials(R"({"AccessKeyId":"A","SecretAccessKey":"S"})").ok());
  EXPECT_FALSE(detail::parse_process_credentials(R"({"Version":1,"AccessKeyId":7,"SecretAccessKey":"S"})").ok());
  EXPECT_FALSE(detail::parse_process_credentials(R"([1,2])").ok());
}

TEST(CredentialParsingTest, ContainerUrlRules) {
  EXPECT_EQ(*detail::container_url("/v2/credentials/abc", ""), "http://169.254.170.2/v2/credentials/abc");
  EXPECT_EQ(*detail::container_url("/rel", "http://127.0.0.1:1/full"), "http://169.254.170.2/rel");
  for (const char* ok : {"http://127.0.0.1:8080/creds", "http://127.1.2.3/c", "http://localhost:9/c",
                         "http://[::1]:80/c", "http://169.254.170.2/c", "http://169.254.170.23/v1",
                         "http://[fd00:ec2::23]/v1", "https://creds.example.com/x"}) {
    EXPECT_TRUE(detail::container_url("", ok).ok()) << ok;
  }
  for (const char* bad : {"http://example.com/c", "http://10.0.0.1/c", "http://169.254.169.254/c",
                          "http://user@127.0.0.1/c", "ftp://127.0.0.1/c", "127.0.0.1/c",
                          "http://127.0.0.1.example.com/c"}) {
    EXPECT_EQ(detail::container_url("", bad).error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(detail::container_url("v2/no-slash", "").ok());
}

TEST(CredentialParsingTest, RedactsEverySecret) {
  EXPECT_EQ(detail::redact("a TOK b TOK c SEC", {"TOK", "", "SEC"}), "a REDACTED b REDACTED c REDACTED");
  EXPECT_EQ(detail::redact("xREDy", {"RED"}), "xREDACTEDy");  // terminates though the mark holds it
  AwsCredentials c{"AKIAEXAMPLE", "VerySecret", "SessTok", utc(2030, 1, 1, 0, 0, 0)};
  const std::string s = c.to_string();
  EXPECT_NE(s.find("AKIA"), std::string::npos);
  EXPECT_EQ(s.find("AKIAEXAMPLE"), std::string::npos);
  EXPECT_EQ(s.find("VerySecret"), std::string::npos);
  EXPECT_EQ(s.find("SessTok"), std::string::npos);
}

// --- which source the chain picks (nothing is fetched: only source() and static keys) -------

struct Home {
  fs::path dir;
  explicit Home(const std::string& name, const std::string& credentials, const std::string& config)
      : dir(temp_dir(name)) {
    fs::create_directories(dir / ".aws");
    if (!credentials.empty()) std::ofstream(dir / ".aws/credentials") << credentials;
    if (!config.empty()) std::ofstream(dir / ".aws/config") << config;
  }
  ~Home() { fs::remove_all(dir); }
  EnvLookup env(EnvLookup extra = {}) const {
    extra["HOME"] = dir.string();
    return extra;
  }
};

std::string pick(const EnvLookup& env, bool imds = false) {
  auto p = make_default_credentials(env, AwsConfig{}, imds);
  return p.ok() ? (*p)->source() : "error " + std::string(error_code_name(p.error().code()));
}

std::string static_key(const EnvLookup& env) {
  auto p = make_default_credentials(env, AwsConfig{}, false);
  if (!p.ok()) return "error";
  auto c = (*p)->get();
  return c.ok() ? (*c)->access_key_id : "error";
}

TEST(CredentialChainTest, OrderFollowsBotocore) {
  Home home("order",
            "[default]\naws_access_key_id = CREDFILE\naws_secret_access_key = S1\n"
            "[p2]\naws_access_key_id = P2KEY\naws_secret_access_key = S2\n",
            "[default]\ncredential_process = /bin/false\naws_access_key_id = CONFKEY\n"
            "aws_secret_access_key = S3\n"
            "[profile proc]\ncredential_process = /usr/bin/helper --x\n"
            "aws_access_key_id = CONFKEY2\naws_secret_access_key = S4\n"
            "[profile conf]\naws_access_key_id = CONFONLY\naws_secret_access_key = S5\n");
  const EnvLookup web = {{"AWS_WEB_IDENTITY_TOKEN_FILE", "/tok"}, {"AWS_ROLE_ARN", "arn:r"}};
  const EnvLookup container = {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/c"}};
  // Environment keys win over everything.
  EnvLookup env = home.env(web);
  env.insert(container.begin(), container.end());
  env["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  EXPECT_EQ(pick(env, true), "environment");
  EXPECT_EQ(static_key(env), "ENVKEY");
  // Then web identity, even over the shared credentials file.
  EXPECT_EQ(pick(home.env(web)), "web identity (role arn:r)");
  // Shared credentials file beats credential_process and the config file's keys.
  EXPECT_EQ(static_key(home.env()), "CREDFILE");
  EXPECT_EQ(static_key(home.env({{"AWS_PROFILE", "p2"}})), "P2KEY");
  // credential_process ("[profile proc]") beats the config file's keys of the same profile.
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "proc"}})), "credential_process of profile 'proc'");
  EXPECT_EQ(static_key(home.env({{"AWS_PROFILE", "conf"}})), "CONFONLY");
  // Nothing in the files for this profile: container, then IMDS (opted in), then anonymous.
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "none"}})), "anonymous");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "none"}}), true),
            "EC2 instance metadata at http://169.254.169.254");
  EnvLookup c = home.env({{"AWS_PROFILE", "none"}});
  c.insert(container.begin(), container.end());
  EXPECT_EQ(pick(c, true), "container endpoint http://127.0.0.1:9/c");
}

TEST(CredentialChainTest, WebIdentityFromProfileAndEnvOverrides) {
  Home home("webid", "",
            "[profile eks]\nweb_identity_token_file = /var/tok\nrole_arn = arn:aws:iam::1:role/p\n"
            "[profile norole]\nweb_identity_token_file = /var/tok\n");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "eks"}})), "web identity (role arn:aws:iam::1:role/p)");
  // AWS_ROLE_ARN overrides the profile's role, key by key as botocore does.
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "eks"}, {"AWS_ROLE_ARN", "arn:env"}})),
            "web identity (role arn:env)");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "norole"}})), "error InvalidArgument");
  EXPECT_EQ(pick(home.env({{"AWS_WEB_IDENTITY_TOKEN_FILE", "/t"}})), "error InvalidArgument");
}

TEST(CredentialChainTest, MisconfigurationAndUnsupportedSourcesAreErrors) {
  Home home("unsupported", "[half]\naws_access_key_id = K\n",
            "[profile chained]\nrole_arn = arn:r\nsource_profile = default\n"
            "[profile sso]\nsso_start_url = https://x\n");
  EXPECT_EQ(pick(home.env({{"AWS_ACCESS_KEY_ID", "K"}})), "error InvalidArgument");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "half"}})), "error InvalidArgument");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "chained"}})), "error Unimplemented");
  EXPECT_EQ(pick(home.env({{"AWS_PROFILE", "sso"}})), "error Unimplemented");
  EXPECT_EQ(pick(home.env({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/c"}})),
            "error InvalidArgument");
}

TEST(CredentialChainTest, ImdsOnlyWhenOptedIn) {
  Home home("imds", "", "");
  EXPECT_EQ(pick(home.env()), "anonymous");  // never the link-local address on our own
  EXPECT_EQ(pick(home.env(), true), "EC2 instance metadata at http://169.254.169.254");
  EXPECT_EQ(pick(home.env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:7/"}})),
            "EC2 instance metadata at http://127.0.0.1:7");
  EXPECT_EQ(pick(home.env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6"}}), true),
            "EC2 instance metadata at http://[fd00:ec2::254]");
  EXPECT_EQ(pick(home.env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:7"},
                           {"AWS_EC2_METADATA_DISABLED", "TRUE"}}), true),
            "anonymous");
}

// --- refresh policy under a fake clock --------------------------------------------------------

struct FakeSource {
  std::atomic<SysClock::time_point> now{utc(2030, 1, 1, 0, 0, 0)};
  std::atomic<int> calls{0};
  std::atomic<bool> fail{false};
  std::chrono::seconds lifetime{3600};

  CredentialOptions options() {
    CredentialOptions o;
    o.refresh_window = 5min;
    o.refresh_retry = 10s;
    o.clock = [this] { return now.load(); };
    return o;
  }
  std::function<Result<AwsCredentials>()> fetch() {
    return [this]() -> Result<AwsCredentials> {
      const int n = ++calls;
      if (fail) return unavailable("endpoint down");
      return AwsCredentials{"KEY" + std::to_string(n), "SECRET" + std::to_string(n), "TOK",
                            now.load() + lifetime};
    };
  }
  void advance(std::chrono::seconds s) { now = now.load() + s; }
};

std::string key_of(CredentialProvider& p) {
  auto c = p.get();
  return c.ok() ? (*c)->access_key_id : "error " + std::string(error_code_name(c.error().code()));
}

TEST(CredentialRefreshTest, RefreshesInsideTheWindowOnly) {
  FakeSource src;
  auto p = make_refreshing_credentials("fake", src.fetch(), src.options());
  EXPECT_EQ(key_of(*p), "KEY1");
  src.advance(54min);  // 6 min left: no refresh yet
  for (int i = 0; i < 100; ++i) EXPECT_EQ(key_of(*p), "KEY1");
  EXPECT_EQ(src.calls, 1);
  src.advance(2min);  // 4 min left: inside the 5-minute window
  EXPECT_EQ(key_of(*p), "KEY2");
  EXPECT_EQ(key_of(*p), "KEY2");
  EXPECT_EQ(src.calls, 2);
}

TEST(CredentialRefreshTest, FailedRefreshKeepsOldKeysUntilExpiry) {
  FakeSource src;
  auto p = make_refreshing_credentials("fake source", src.fetch(), src.options());
  EXPECT_EQ(key_of(*p), "KEY1");
  src.fail = true;
  src.advance(56min);  // 4 min left
  EXPECT_EQ(key_of(*p), "KEY1");  // refresh failed, old keys still valid
  EXPECT_EQ(src.calls, 2);
  EXPECT_EQ(key_of(*p), "KEY1");  // within refresh_retry: no new attempt
  EXPECT_EQ(src.calls, 2);
  src.advance(11s);
  EXPECT_EQ(key_of(*p), "KEY1");
  EXPECT_EQ(src.calls, 3);
  src.advance(4min);  // expired
  auto r = p->get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  const std::string msg = r.error().to_string();
  EXPECT_NE(msg.find("expired at 2030-01-01T01:00:00Z"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fake source"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("SECRET1"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("TOK"), std::string::npos) << msg;
  src.fail = false;  // expired: every call tries again at once
  EXPECT_EQ(key_of(*p), "KEY5");
}

TEST(CredentialRefreshTest, FirstFetchFailureAndPermissionDenied) {
  std::atomic<int> calls{0};
  auto p = make_refreshing_credentials("sts", [&]() -> Result<AwsCredentials> {
    ++calls;
    return permission_denied("HTTP 403 InvalidIdentityToken");
  });
  EXPECT_EQ(key_of(*p), "error PermissionDenied");
  EXPECT_EQ(key_of(*p), "error PermissionDenied");
  EXPECT_EQ(calls, 2);  // nothing valid: no back-off between tries
  auto thrower = make_refreshing_credentials("t", []() -> Result<AwsCredentials> {
    throw std::runtime_error("boom");
  });
  EXPECT_EQ(key_of(*thrower), "error Unavailable");
  EXPECT_EQ(key_of(*thrower), "error Unavailable");  // no stuck "refreshing" flag
}

TEST(CredentialRefreshTest, CredentialsExpiredOnArrivalAreAnError) {
  FakeSource src;
  src.lifetime = std::chrono::seconds(-1);
  auto p = make_refreshing_credentials("skewed", src.fetch(), src.options());
  auto r = p->get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.error().to_string().find("clock"), std::string::npos) << r.error().to_string();
}

TEST(CredentialRefreshTest, OneFetchAtATimeAndWaitersShareIt) {
  std::atomic<int> calls{0};
  auto p = make_refreshing_credentials("slow", [&]() -> Result<AwsCredentials> {
    ++calls;
    std::this_thread::sleep_for(100ms);
    return AwsCredentials{"SLOWKEY", "S", "", SysClock::now() + 1h};
  });
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { good += key_of(*p) == "SLOWKEY"; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good, 8);
  EXPECT_EQ(calls, 1);
}

TEST(CredentialRefreshTest, ValidKeysAreNotBlockedByARefresh) {
  FakeSource src;
  std::latch in_fetch(1), release(1);
  auto base = src.fetch();
  auto p = make_refreshing_credentials("gated", [&]() -> Result<AwsCredentials> {
    if (src.calls > 0) {
      in_fetch.count_down();
      release.wait();
    }
    return base();
  }, src.options());
  EXPECT_EQ(key_of(*p), "KEY1");
  src.advance(57min);
  std::thread refresher([&] { EXPECT_EQ(key_of(*p), "KEY2"); });
  in_fetch.wait();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(key_of(*p), "KEY1");  // at once, while it refreshes
  release.count_down();
  refresher.join();
  EXPECT_EQ(key_of(*p), "KEY2");
}

// --- credential_process against local scripts -------------------------------------------------

fs::path script(const fs::path& dir, const std::string& name, const std::string& body) {
  fs::path p = dir / name;
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

TEST(CredentialProcessTest, RunsWithArgumentsAndBounds) {
  fs::path dir = temp_dir("process");
  fs::path ok = script(dir, "ok.sh",
                       "printf '{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": \"S\"}' \"$1\"\n");
  auto c = detail::run_credential_process({"'" + ok.string() + "' 'KEY WITH SPACE'", "p", 5s, 4096});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->access_key_id, "KEY WITH SPACE");

  fs::path bad = script(dir, "bad.sh", "echo 'LeakedSecret123' >&2\necho 'AlsoSecret' \nexit 3\n");
  auto f = detail::run_credential_process({bad.string() + " --password hunter2", "p", 5s, 4096});
  ASSERT_FALSE(f.ok());
  const std::string msg = f.error().to_string();
  EXPECT_NE(msg.find("exited with status 3"), std::string::npos) << msg;
  for (const char* secret : {"LeakedSecret123", "AlsoSecret", "hunter2"})
    EXPECT_EQ(msg.find(secret), std::string::npos) << msg;

  const auto t0 = std::chrono::steady_clock::now();
  fs::path slow = script(dir, "slow.sh", "sleep 30\n");
  auto t = detail::run_credential_process({slow.string(), "p", 300ms, 4096});
  EXPECT_EQ(t.error().code(), ErrorCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);

  fs::path big = script(dir, "big.sh", "head -c 100000 /dev/zero\n");
  auto b = detail::run_credential_process({big.string(), "p", 5s, 4096});
  EXPECT_FALSE(b.ok());
  EXPECT_NE(b.error().to_string().find("cap"), std::string::npos);

  auto missing = detail::run_credential_process({(dir / "nope").string(), "p", 5s, 4096});
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stoker::io
