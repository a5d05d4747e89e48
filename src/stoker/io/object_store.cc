#include "stoker/io/object_store.h"

#include "stoker/io/uri.h"

namespace stoker::io {

ObjectStore::~ObjectStore() = default;

exec::Future<void> ObjectStore::write(const std::string& uri, Bytes) {
  auto [promise, future] = exec::make_promise_future<void>();
  promise.set(unimplemented("this store cannot write: " + shown_uri(uri)));
  return std::move(future);
}

void ObjectStore::read(const std::string& uri, ReadOptions options,
                       std::function<void(Result<Bytes>)> done) {
  read(uri, std::move(options)).on_ready(std::move(done));
}

namespace {

// Routes by scheme. The remote backends are created with the store and share one client.
class RoutingStore final : public ObjectStore {
 public:
  RoutingStore(std::shared_ptr<HttpClient> client, AwsConfig aws,
               std::unique_ptr<ObjectStore> local, std::shared_ptr<CredentialProvider> credentials)
      : client_(client), local_(std::move(local)), http_(make_http_store(client)),
        s3_(make_s3_store(client, std::move(aws), std::move(credentials))) {}

  exec::Future<Bytes> read(const std::string& uri, ReadOptions options) override {
    return pick(uri).read(uri, std::move(options));
  }
  exec::Future<ObjectInfo> head(const std::string& uri) override { return pick(uri).head(uri); }
  exec::Future<void> write(const std::string& uri, Bytes data) override {
    return pick(uri).write(uri, std::move(data));
  }
  HttpClientStats stats() const override { return client_->stats(); }

 private:
  ObjectStore& pick(const std::string& uri) {
    if (uri.rfind("s3://", 0) == 0) return *s3_;
    if (uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0) return *http_;
    return *local_;  // file:// and plain paths; a bad scheme is reported by the local store
  }

  std::shared_ptr<HttpClient> client_;
  std::unique_ptr<ObjectStore> local_, http_, s3_;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_store(const StoreOptions& options) {
  AwsConfig aws;
  std::shared_ptr<CredentialProvider> credentials;
  if (options.aws) {
    aws = *options.aws;
    credentials = make_static_credentials(aws);
  } else {
    const EnvLookup env = aws_environment();
    STOKER_ASSIGN_OR_RETURN(aws, load_aws_config(env));
    STOKER_ASSIGN_OR_RETURN(credentials,
                            make_default_credentials(env, aws, options.imds, options.credentials));
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> local, make_local_store(options.local));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<HttpClient> client, HttpClient::create(options.http));
  return std::unique_ptr<ObjectStore>(new RoutingStore(
      std::shared_ptr<HttpClient>(std::move(client)), std::move(aws), std::move(local),
      std::move(credentials)));
}

Result<Bytes> read_sync(ObjectStore& store, const std::string& uri, ReadOptions options) {
  exec::Future<Bytes> f = store.read(uri, std::move(options));
  return std::move(f.get());
}

Result<ObjectInfo> head_sync(ObjectStore& store, const std::string& uri) {
  exec::Future<ObjectInfo> f = store.head(uri);
  return std::move(f.get());
}

namespace {

// One pass over one version: every ranged GET carries If-Match with the ETag the HEAD saw, so
// a replaced object fails a chunk with FailedPrecondition instead of mixing two versions.
Status stream_once(ObjectStore& store, const std::string& uri, std::int64_t chunk_bytes,
                   const std::function<Status(std::span<const std::uint8_t>, std::int64_t)>& consume,
                   ObjectInfo* info) {
  STOKER_ASSIGN_OR_RETURN(ObjectInfo head, head_sync(store, uri));
  if (info) *info = head;
  std::int64_t offset = 0;
  auto fetch = [&](std::int64_t at) {
    return store.read(uri, ReadOptions{.offset = at,
                                       .length = std::min(chunk_bytes, head.size - at),
                                       .if_match = head.etag});
  };
  exec::Future<Bytes> next;
  if (head.size > 0) next = fetch(0);
  while (offset < head.size) {
    Result<Bytes> chunk = std::move(next.get());
    const std::int64_t want = std::min(chunk_bytes, head.size - offset);
    if (offset + want < head.size) next = fetch(offset + want);  // overlap with consume()
    if (!chunk.ok()) {
      return std::move(chunk).error().with_context("streaming " + shown_uri(uri) + " at byte " +
                                                   std::to_string(offset));
    }
    if (static_cast<std::int64_t>(chunk->size()) != want) {
      return data_loss("streaming " + shown_uri(uri) + ": expected " + std::to_string(want) +
                       " bytes at " + std::to_string(offset) + ", got " +
                       std::to_string(chunk->size()) + " (object changed?)");
    }
    STOKER_RETURN_IF_ERROR(consume(*chunk, offset));
    offset += want;
  }
  return ok_status();
}

}  // namespace

Status stream_object(ObjectStore& store, const std::string& uri, std::int64_t chunk_bytes,
                     const std::function<Status(std::span<const std::uint8_t>, std::int64_t)>& consume,
                     ObjectInfo* info, int max_restarts) {
  if (chunk_bytes < 1) return invalid_argument("stream_object: chunk_bytes must be >= 1");
  for (int restarts = 0;; ++restarts) {
    Status st = stream_once(store, uri, chunk_bytes, consume, info);
    if (st.ok() || st.error().code() != ErrorCode::kFailedPrecondition) return st;
    if (restarts == max_restarts) {
      return std::move(st).error().with_context("streaming " + shown_uri(uri) + ": replaced " +
                                                std::to_string(restarts + 1) +
                                                " times while it was read");
    }
  }
}

}  // namespace stoker::io
