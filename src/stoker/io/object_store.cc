#include "stoker/io/object_store.h"

#include "stoker/io/uri.h"

namespace stoker::io {

ObjectStore::~ObjectStore() = default;

exec::Future<void> ObjectStore::write(const std::string& uri, Bytes) {
  auto [promise, future] = exec::make_promise_future<void>();
  promise.set(unimplemented("this store cannot write: " + uri));
  return std::move(future);
}

void ObjectStore::read(const std::string& uri, ByteRange range,
                       std::function<void(Result<Bytes>)> done) {
  read(uri, range).on_ready(std::move(done));
}

namespace {

// Routes by scheme. The remote backends are created with the store and share one client.
class RoutingStore final : public ObjectStore {
 public:
  RoutingStore(std::shared_ptr<HttpClient> client, AwsConfig aws,
               std::shared_ptr<CredentialProvider> credentials)
      : client_(client), local_(make_local_store()), http_(make_http_store(client)),
        s3_(make_s3_store(client, std::move(aws), std::move(credentials))) {}

  exec::Future<Bytes> read(const std::string& uri, ByteRange range) override {
    return pick(uri).read(uri, range);
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
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<HttpClient> client, HttpClient::create(options.http));
  return std::unique_ptr<ObjectStore>(new RoutingStore(
      std::shared_ptr<HttpClient>(std::move(client)), std::move(aws), std::move(credentials)));
}

Result<Bytes> read_sync(ObjectStore& store, const std::string& uri, ByteRange range) {
  exec::Future<Bytes> f = store.read(uri, range);
  return std::move(f.get());
}

Result<ObjectInfo> head_sync(ObjectStore& store, const std::string& uri) {
  exec::Future<ObjectInfo> f = store.head(uri);
  return std::move(f.get());
}

Status stream_object(ObjectStore& store, const std::string& uri, std::int64_t chunk_bytes,
                     const std::function<Status(std::span<const std::uint8_t>, std::int64_t)>& consume,
                     ObjectInfo* info) {
  if (chunk_bytes < 1) return invalid_argument("stream_object: chunk_bytes must be >= 1");
  STOKER_ASSIGN_OR_RETURN(ObjectInfo head, head_sync(store, uri));
  if (info) *info = head;
  std::int64_t offset = 0;
  auto fetch = [&](std::int64_t at) {
    return store.read(uri, ByteRange{at, std::min(chunk_bytes, head.size - at)});
  };
  exec::Future<Bytes> next;
  if (head.size > 0) next = fetch(0);
  while (offset < head.size) {
    Result<Bytes> chunk = std::move(next.get());
    const std::int64_t want = std::min(chunk_bytes, head.size - offset);
    if (offset + want < head.size) next = fetch(offset + want);  // overlap with consume()
    if (!chunk.ok()) {
      return std::move(chunk).error().with_context("streaming " + uri + " at byte " +
                                                   std::to_string(offset));
    }
    if (static_cast<std::int64_t>(chunk->size()) != want) {
      return data_loss("streaming " + uri + ": expected " + std::to_string(want) +
                       " bytes at " + std::to_string(offset) + ", got " +
                       std::to_string(chunk->size()) + " (object changed?)");
    }
    STOKER_RETURN_IF_ERROR(consume(*chunk, offset));
    offset += want;
  }
  return ok_status();
}

}  // namespace stoker::io
