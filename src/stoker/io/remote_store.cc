// The HTTP(S) and S3 backends: each turns a URI into an HttpRequest (URL, Range, signing) and the
// response into bytes or ObjectInfo. Retries, deadlines and admission all live in HttpClient.
#include <string_view>

#include "stoker/io/detail/response.h"
#include "stoker/io/detail/text.h"
#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

template <typename T>
exec::Future<T> failed(Error e) {
  auto [promise, future] = exec::make_promise_future<T>();
  promise.set(std::move(e));
  return std::move(future);
}

bool has_dot_segment(std::string_view key) {
  std::size_t i = 0;
  while (i <= key.size()) {
    std::size_t j = key.find('/', i);
    if (j == std::string_view::npos) j = key.size();
    const std::string_view seg = key.substr(i, j - i);
    if (seg == "." || seg == "..") return true;
    i = j + 1;
  }
  return false;
}

// Range, If-Match and the body cap of a GET.
void add_read_options(HttpRequest& req, const ReadOptions& range) {
  if (!range.if_match.empty()) req.headers.push_back("If-Match: \"" + range.if_match + "\"");
  req.max_body_bytes = range.max_bytes;
  if (range.whole()) return;
  std::string spec = "Range: bytes=" + std::to_string(range.offset) + "-";
  if (range.length >= 0) spec += std::to_string(range.offset + range.length - 1);
  req.headers.push_back(spec);
  if (range.length >= 0) req.expected_bytes = range.length;
}

// Shared by both backends: they differ only in how a URI becomes a request.
class RemoteStore : public ObjectStore {
 public:
  explicit RemoteStore(std::shared_ptr<HttpClient> client) : client_(std::move(client)) {}

  exec::Future<Bytes> read(const std::string& uri, ReadOptions range) override {
    if (range.offset < 0) return failed<Bytes>(invalid_argument(shown_uri(uri) + ": negative offset"));
    if (range.length == 0) return empty();
    Result<HttpRequest> req = make_request("GET", uri);
    if (!req.ok()) return failed<Bytes>(std::move(req).error());
    add_read_options(*req, range);
    auto promise = std::make_shared<exec::Promise<Bytes>>();
    exec::Future<Bytes> future = promise->get_future();
    std::string what = req->display;
    client_->submit(std::move(*req), [promise, range, what](Result<HttpResponse> r) {
      if (!r.ok()) return promise->set(std::move(r).error());
      promise->set(detail::body_for_range(std::move(*r), range, what));
    });
    return future;
  }

  exec::Future<ObjectInfo> head(const std::string& uri) override {
    Result<HttpRequest> req = make_request("HEAD", uri);
    if (!req.ok()) return failed<ObjectInfo>(std::move(req).error());
    req->expected_bytes = 0;
    auto promise = std::make_shared<exec::Promise<ObjectInfo>>();
    exec::Future<ObjectInfo> future = promise->get_future();
    std::string what = req->display;
    client_->submit(std::move(*req), [promise, what](Result<HttpResponse> r) {
      if (!r.ok()) return promise->set(std::move(r).error());
      promise->set(detail::info_from(*r, what));
    });
    return future;
  }

  HttpClientStats stats() const override { return client_->stats(); }

 protected:
  virtual Result<HttpRequest> make_request(const std::string& method, const std::string& uri) = 0;

  static exec::Future<Bytes> empty() {
    auto [promise, future] = exec::make_promise_future<Bytes>();
    promise.set(Bytes{});
    return std::move(future);
  }

  std::shared_ptr<HttpClient> client_;
};

class HttpStore final : public RemoteStore {
 public:
  using RemoteStore::RemoteStore;

 protected:
  Result<HttpRequest> make_request(const std::string& method, const std::string& uri) override {
    STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
    if (u.scheme != Scheme::kHttp && u.scheme != Scheme::kHttps)
      return unimplemented("not an http(s) URI: " + shown_uri(uri));
    HttpRequest req;
    req.method = method;
    req.url = request_url(uri);  // parse_uri validated it: curl parses the host we judged
    req.display = shown_uri(uri);
    return req;
  }
};

class S3Store final : public RemoteStore {
 public:
  S3Store(std::shared_ptr<HttpClient> client, AwsConfig aws,
          std::shared_ptr<CredentialProvider> credentials)
      : RemoteStore(std::move(client)), aws_(std::move(aws)),
        credentials_(std::move(credentials)), sigv4_("aws:amz:" + aws_.region + ":s3") {}

  exec::Future<void> write(const std::string& uri, Bytes data) override {
    auto promise = std::make_shared<exec::Promise<void>>();
    exec::Future<void> future = promise->get_future();
    Result<HttpRequest> req = make_request("PUT", uri);
    if (!req.ok()) {
      promise->set(std::move(req).error());
      return future;
    }
    req->body = std::move(data);
    req->expected_bytes = 0;
    client_->submit(std::move(*req), [promise](Result<HttpResponse> r) {
      promise->set(r.ok() ? ok_status() : Status(std::move(r).error()));
    });
    return future;
  }

 protected:
  Result<HttpRequest> make_request(const std::string& method, const std::string& uri) override {
    STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
    if (u.scheme != Scheme::kS3) return unimplemented("not an s3 URI: " + shown_uri(uri));
    if (u.path.empty()) return invalid_argument("s3 URI without a key: " + shown_uri(uri));
    // "." / ".." segments would be folded by URL normalisation (libcurl's, a proxy's) in the
    // path-style URL — /bkt/../other/k is bucket "other": refused, never sent.
    if (has_dot_segment(u.path)) {
      return invalid_argument("s3 key with a '.' or '..' segment cannot be addressed safely: " +
                              shown_uri(uri));
    }
    HttpRequest req;
    req.method = method;
    req.display = shown_uri(uri);
    const std::string key = detail::percent_encode(u.path, /*keep_slash=*/true);  // as SigV4 wants
    if (aws_.endpoint.empty()) {
      req.url = "https://" + u.authority + ".s3." + aws_.region + ".amazonaws.com/" + key;
    } else if (aws_.path_style) {
      req.url = aws_.endpoint + "/" + u.authority + "/" + key;
    } else {
      std::size_t scheme_end = aws_.endpoint.find("://");
      std::size_t host_at = scheme_end == std::string::npos ? 0 : scheme_end + 3;
      req.url = aws_.endpoint.substr(0, host_at) + u.authority + "." +
                aws_.endpoint.substr(host_at) + "/" + key;
    }
    // Per request: temporary credentials change under a long run (credentials.h refreshes them).
    Result<std::shared_ptr<const AwsCredentials>> creds = credentials_->get();
    if (!creds.ok()) return std::move(creds).error().with_context(method + " " + req.display);
    if (!(*creds)->anonymous()) {
      req.aws_sigv4 = sigv4_;
      req.credentials = (*creds)->access_key_id + ":" + (*creds)->secret_access_key;
      // libcurl 7.88 neither adds this header nor signs a payload hash S3 accepts without it.
      req.headers.push_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
      if (!(*creds)->session_token.empty())
        req.headers.push_back("x-amz-security-token: " + (*creds)->session_token);
    }
    return req;
  }

 private:
  AwsConfig aws_;
  std::shared_ptr<CredentialProvider> credentials_;
  std::string sigv4_;
};

}  // namespace

std::unique_ptr<ObjectStore> make_http_store(std::shared_ptr<HttpClient> client) {
  return std::make_unique<HttpStore>(std::move(client));
}

std::unique_ptr<ObjectStore> make_s3_store(std::shared_ptr<HttpClient> client, AwsConfig aws) {
  auto credentials = make_static_credentials(aws);
  return std::make_unique<S3Store>(std::move(client), std::move(aws), std::move(credentials));
}

std::unique_ptr<ObjectStore> make_s3_store(std::shared_ptr<HttpClient> client, AwsConfig aws,
                                           std::shared_ptr<CredentialProvider> credentials) {
  return std::make_unique<S3Store>(std::move(client), std::move(aws), std::move(credentials));
}

}  // namespace stoker::io
