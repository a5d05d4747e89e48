// Unit tests of the io module that need no server: URIs, the AWS credential chain, the local
// store, chunked streaming, the request path's error mapping and retry bound against a closed
// port. Servers (S3, HTTP, the signature check) are in tests/io/ (ctest label `net`).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "stoker/io/loopback.h"
#include "stoker/base/file.h"
#include "stoker/io/aws_config.h"
#include "stoker/io/detail/response.h"
#include "stoker/io/http_client.h"
#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("stoker_io_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The response parsing HttpClient and the backends share (detail/response.h, fuzzed by the
// http target): header lines in any case, a Content-Length that is not a plain int64 is unknown.
TEST(ResponseTest, HeaderLinesAndRanges) {
  HttpResponse r;
  EXPECT_FALSE(detail::apply_header_line("HTTP/1.1 206 Partial Content\r\n", &r));
  EXPECT_FALSE(detail::apply_header_line("ETag: \"abc\"\r\n", &r));
  EXPECT_TRUE(detail::apply_header_line("content-LENGTH:\t 12 \r\n", &r));
  EXPECT_FALSE(detail::apply_header_line("Content-Range: bytes 5-16/100\r\n", &r));
  EXPECT_EQ(r.etag, "abc");
  EXPECT_EQ(r.content_length, 12);
  EXPECT_EQ(r.content_range, "bytes 5-16/100");
  for (const char* bad : {"", "-1", "12x", "99999999999999999999", "+5", " "})
    EXPECT_EQ(detail::parse_content_length(bad), -1) << bad;
  r.status = 206;
  r.body.assign(20, 'x');
  auto ranged = detail::body_for_range(r, ReadOptions{.offset = 5, .length = 12}, "u");
  ASSERT_TRUE(ranged.ok());
  EXPECT_EQ(ranged->size(), 12u);
  EXPECT_FALSE(detail::body_for_range(r, ReadOptions{.offset = 6, .length = 12}, "u").ok());
  r.status = 200;
  auto sliced = detail::body_for_range(r, ReadOptions{.offset = 15, .length = 10}, "u");
  ASSERT_TRUE(sliced.ok());
  EXPECT_EQ(sliced->size(), 5u);
  EXPECT_FALSE(detail::body_for_range(r, ReadOptions{.offset = 21, .length = 1}, "u").ok());
}

TEST(UriTest, ParsesSchemes) {
  auto s3 = parse_uri("s3://bucket/a/b.jpg");
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->scheme, Scheme::kS3);
  EXPECT_EQ(s3->authority, "bucket");
  EXPECT_EQ(s3->path, "a/b.jpg");
  auto http = parse_uri("http://127.0.0.1:8080/x/y?z=1");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->authority, "127.0.0.1:8080");
  EXPECT_EQ(http->path, "/x/y?z=1");
  EXPECT_EQ(parse_uri("file:///tmp/x")->path, "/tmp/x");
  EXPECT_EQ(parse_uri("rel/x.png")->scheme, Scheme::kFile);
  EXPECT_EQ(parse_uri("gs://b/k").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parse_uri("s3:///k").error().code(), ErrorCode::kInvalidArgument);
}

TEST(UriTest, ResolvesRelativeToManifest) {
  auto r = [](const char* ref, const char* base) {
    Result<std::string> u = resolve_uri(ref, base);
    return u.ok() ? *u : "error: " + std::string(error_code_name(u.error().code()));
  };
  EXPECT_EQ(r("img/a.jpg", "s3://b/data/train.jsonl"), "s3://b/data/img/a.jpg");
  EXPECT_EQ(r("../img/a.jpg", "s3://b/data/train.jsonl"), "s3://b/img/a.jpg");
  EXPECT_EQ(r("../../../x", "s3://b/data/m.jsonl"), "s3://b/x");
  EXPECT_EQ(r("a.png", "http://h:1/d/m.jsonl?sig=1"), "http://h:1/d/a.png");
  EXPECT_EQ(r("../a.png?v=2", "http://h:1/d/e/m.jsonl"), "http://h:1/d/a.png?v=2");
  EXPECT_EQ(r("./a.png", "/data/m.jsonl"), "/data/a.png");
  EXPECT_EQ(r("sub/../../x.png", "/data/set/m.jsonl"), "/data/x.png");
  EXPECT_EQ(r("../../../../etc/shadow", "/data/set/m.jsonl"), "/etc/shadow");
  EXPECT_EQ(r("a.png", "m.jsonl"), "a.png");
  EXPECT_EQ(r("s3://other/k", "/data/m.jsonl"), "s3://other/k");
  EXPECT_EQ(r("s3://b/a/../k", "/data/m.jsonl"), "s3://b/a/../k");  // S3 keys are literal
  EXPECT_EQ(r("/abs/k.png", "s3://b/m.jsonl"), "/abs/k.png");
  EXPECT_EQ(r("file:///abs/./k.png", "s3://b/m.jsonl"), "/abs/k.png");
  EXPECT_EQ(r("file://localhost/abs/k.png", "/d/m.jsonl"), "/abs/k.png");
  EXPECT_EQ(r("file://evil.example/abs/k.png", "/d/m.jsonl"), "error: InvalidArgument");
  EXPECT_EQ(r("gs://b/k.png", "/d/m.jsonl"), "error: InvalidArgument");
  EXPECT_EQ(r("", "/d/m.jsonl"), "error: InvalidArgument");
  EXPECT_EQ(resolve_uri(std::string_view("a\0b", 3), "/d/m.jsonl").error().code(),
            ErrorCode::kInvalidArgument);
}

TEST(UriTest, OneMeaningOfHasScheme) {
  EXPECT_TRUE(has_scheme("s3://b/k"));
  EXPECT_TRUE(has_scheme("gs://b/k"));
  EXPECT_TRUE(has_scheme("file:///x"));
  EXPECT_TRUE(has_scheme("svn+ssh://h/x"));
  EXPECT_FALSE(has_scheme("a/b://c"));
  EXPECT_FALSE(has_scheme("./x://y"));
  EXPECT_FALSE(has_scheme("://x"));
  EXPECT_FALSE(has_scheme("1a://x"));
  EXPECT_FALSE(has_scheme("C:/x"));
  EXPECT_TRUE(is_remote_uri("https://h/x"));
  EXPECT_FALSE(is_remote_uri("file:///x"));
}

TEST(AwsConfigTest, EnvironmentWinsOverProfiles) {
  fs::path home = temp_dir("aws_env");
  fs::create_directories(home / ".aws");
  std::ofstream(home / ".aws/credentials") << "[default]\naws_access_key_id = FILEKEY\n"
                                              "aws_secret_access_key = FILESECRET\n";
  auto c = load_aws_config({{"HOME", home.string()},
                            {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                            {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"},
                            {"AWS_SESSION_TOKEN", "TOK"},
                            {"AWS_DEFAULT_REGION", "eu-west-1"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "ENVKEY");
  EXPECT_EQ(c->secret_access_key, "ENVSECRET");
  EXPECT_EQ(c->session_token, "TOK");
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_TRUE(c->endpoint.empty());
  EXPECT_FALSE(c->path_style);
  EXPECT_EQ(c->to_string().find("ENVSECRET"), std::string::npos);
  fs::remove_all(home);
}

TEST(AwsConfigTest, NamedProfileFromCredentialsAndConfig) {
  fs::path home = temp_dir("aws_profile");
  fs::create_directories(home / ".aws");
  std::ofstream(home / ".aws/credentials")
      << "# comment\n[default]\naws_access_key_id=D\naws_secret_access_key=DS\n"
         "[train]\naws_access_key_id = TK\naws_secret_access_key = TS\naws_session_token = TT\n";
  std::ofstream(home / ".aws/config")
      << "[default]\nregion = us-west-2\n[profile train]\nregion = ap-south-1\n"
         "endpoint_url = http://127.0.0.1:9000/\n";
  auto c = load_aws_config({{"HOME", home.string()}, {"AWS_PROFILE", "train"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "TK");
  EXPECT_EQ(c->secret_access_key, "TS");
  EXPECT_EQ(c->session_token, "TT");
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(c->path_style);
  auto d = load_aws_config({{"HOME", home.string()}, {"AWS_ENDPOINT_URL_S3", "http://h:1"},
                            {"AWS_ENDPOINT_URL", "http://other:2"}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->access_key_id, "D");
  EXPECT_EQ(d->region, "us-west-2");
  EXPECT_EQ(d->endpoint, "http://h:1");
  auto none = load_aws_config({{"HOME", (home / "nowhere").string()}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_credentials());
  EXPECT_EQ(none->region, "us-east-1");
  auto half = load_aws_config({{"AWS_ACCESS_KEY_ID", "K"}});
  EXPECT_EQ(half.error().code(), ErrorCode::kInvalidArgument);
  fs::remove_all(home);
}

TEST(HttpClientTest, ParsesXmlErrorBody) {
  auto [code, message] = parse_xml_error(
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>bad sig"
      "</Message></Error>");
  EXPECT_EQ(code, "SignatureDoesNotMatch");
  EXPECT_EQ(message, "bad sig");
  EXPECT_EQ(parse_xml_error("not xml").first, "");
}

TEST(LocalStoreTest, ReadsRangesHeadsAndReportsMissing) {
  fs::path dir = temp_dir("local");
  std::vector<std::uint8_t> data(10000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  ASSERT_TRUE(write_file((dir / "a.bin").string(), data).ok());
  auto store = make_local_store().value();
  auto whole = read_sync(*store, "file://" + (dir / "a.bin").string());
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, data);
  auto part = read_sync(*store, (dir / "a.bin").string(), {.offset = 100, .length = 50});
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, std::vector<std::uint8_t>(data.begin() + 100, data.begin() + 150));
  auto tail = read_sync(*store, (dir / "a.bin").string(), {.offset = 9990, .length = 100});
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->size(), 10u);
  auto info = head_sync(*store, (dir / "a.bin").string());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 10000);
  EXPECT_FALSE(info->etag.empty());
  EXPECT_EQ(read_sync(*store, (dir / "missing").string()).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(read_sync(*store, "s3://b/k").error().code(), ErrorCode::kUnimplemented);
  fs::remove_all(dir);
}

TEST(StreamObjectTest, StreamsInChunksWithTheEtag) {
  fs::path dir = temp_dir("stream");
  std::vector<std::uint8_t> data(25000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i % 251);
  ASSERT_TRUE(write_file((dir / "m.jsonl").string(), data).ok());
  auto store = make_local_store().value();
  std::vector<std::uint8_t> got;
  std::vector<std::int64_t> offsets;
  ObjectInfo info;
  Status s = stream_object(*store, (dir / "m.jsonl").string(), 10000,
                           [&](std::span<const std::uint8_t> c, std::int64_t off) {
                             got.insert(got.end(), c.begin(), c.end());
                             offsets.push_back(off);
                             return ok_status();
                           }, &info);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(got, data);
  EXPECT_EQ(offsets, (std::vector<std::int64_t>{0, 10000, 20000}));
  EXPECT_EQ(info.size, 25000);
  Status stop = stream_object(*store, (dir / "m.jsonl").string(), 10000,
                              [&](std::span<const std::uint8_t>, std::int64_t) {
                                return Status(data_loss("consumer says no"));
                              });
  EXPECT_EQ(stop.error().code(), ErrorCode::kDataLoss);
  fs::remove_all(dir);
}

TEST(HttpClientTest, RefusedConnectionsRetryABoundedNumberOfTimes) {
  HttpClientOptions o;
  o.backoff.initial_delay = std::chrono::milliseconds(5);
  o.backoff.max_delay = std::chrono::milliseconds(20);
  o.backoff.max_attempts = 4;
  auto client = HttpClient::create(o);
  ASSERT_TRUE(client.ok());
  std::shared_ptr<HttpClient> shared(std::move(*client));
  auto store = make_http_store(shared);
  const std::string uri = "http://127.0.0.1:" + std::to_string(unused_loopback_port()) + "/x";
  auto r = read_sync(*store, uri);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().to_string();
  EXPECT_NE(r.error().to_string().find("4 attempts"), std::string::npos) << r.error().to_string();
  EXPECT_EQ(shared->stats().attempts, 4 + 1);  // + one HEAD probe that finds the store down
  EXPECT_EQ(shared->stats().retries, 3);
}

// s3://bkt/../other/k would be bucket "other" once the path-style URL is normalised: refused
// before any request (the closed port would otherwise give Unavailable).
TEST(S3StoreTest, KeysWithDotSegmentsAreRefusedUnsent) {
  auto client = HttpClient::create({}).value();
  AwsConfig aws;
  aws.endpoint = "http://127.0.0.1:" + std::to_string(unused_loopback_port());
  aws.path_style = true;
  auto store = make_s3_store(std::shared_ptr<HttpClient>(std::move(client)), aws);
  for (const char* uri : {"s3://bkt/../other/x.png", "s3://bkt/a/./x.png", "s3://bkt/a/.."}) {
    auto r = read_sync(*store, uri);
    ASSERT_FALSE(r.ok()) << uri;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().to_string();
  }
  EXPECT_EQ(store->stats().attempts, 0);
}

TEST(HttpClientTest, SilentServerTimesOutEachAttempt) {
  // Listens (the kernel completes the handshake) but never answers: each attempt times out.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  HttpClientOptions o;
  o.attempt_timeout = std::chrono::milliseconds(100);
  o.backoff.initial_delay = std::chrono::milliseconds(5);
  o.backoff.max_attempts = 3;
  auto client = HttpClient::create(o);
  ASSERT_TRUE(client.ok());
  std::shared_ptr<HttpClient> shared(std::move(*client));
  auto store = make_http_store(shared);
  auto r = read_sync(*store, "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x");
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDeadlineExceeded) << r.error().to_string();
  EXPECT_EQ(shared->stats().attempts, 3 + 1);  // + one HEAD probe, silent too
}

TEST(HttpClientTest, DeadlineBoundsRetries) {
  HttpClientOptions o;
  o.backoff.initial_delay = std::chrono::milliseconds(50);
  o.backoff.max_delay = std::chrono::milliseconds(100);
  o.backoff.max_attempts = 1000;
  o.deadline = std::chrono::milliseconds(300);
  auto client = HttpClient::create(o);
  ASSERT_TRUE(client.ok());
  std::shared_ptr<HttpClient> shared(std::move(*client));
  auto store = make_http_store(shared);
  auto t0 = std::chrono::steady_clock::now();
  const std::string refused = "http://127.0.0.1:" + std::to_string(unused_loopback_port()) + "/x";
  auto r = read_sync(*store, refused);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDeadlineExceeded) << r.error().to_string();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST(HttpClientTest, ShutdownCancelsQueuedRequests) {
  HttpClientOptions o;
  o.backoff.initial_delay = std::chrono::seconds(5);
  o.backoff.max_delay = std::chrono::seconds(5);
  auto client = HttpClient::create(o);
  ASSERT_TRUE(client.ok());
  std::shared_ptr<HttpClient> shared(std::move(*client));
  auto store = make_http_store(shared);
  exec::Future<Bytes> f =
      store->read("http://127.0.0.1:" + std::to_string(unused_loopback_port()) + "/x");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // now waiting out a backoff
  store.reset();
  shared.reset();
  EXPECT_EQ(f.get().error().code(), ErrorCode::kCancelled);
}

}  // namespace
}  // namespace stoker::io
