// io_tool: a thin driver of ObjectStore for scripts and tests (tests/io/). One JSON line per
// result, in completion order, then a stats line:
//   io_tool get [options] URI...        whole objects, or --offset/--length ranges
//   io_tool get --stdin [options]       URIs read line by line and submitted as they arrive
//   io_tool head URI...                 size and ETag
//   io_tool stream --chunk N URI        stream_object() in N-byte chunks
//   io_tool put URI FILE                write a local file's bytes to URI
// Options: --deadline-ms --attempt-timeout-ms --attempts --initial-ms --max-delay-ms --inflight
// --max-bytes (in flight) --max-object-bytes (cap per object); credentials (credentials.h):
// --imds --refresh-window-ms --refresh-retry-ms --process-timeout-ms
// The FNV-1a 64 of each body is printed so a test can check the bytes without reading them back.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/base/hash.h"
#include "stoker/base/json_text.h"
#include "stoker/io/object_store.h"

namespace {

using namespace stoker;

std::string fnv1a(std::span<const std::uint8_t> bytes) {
  const std::uint64_t h = fnv1a64(bytes.data(), bytes.size());
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::mutex out_mu;
void emit(const std::string& line) {
  std::lock_guard lock(out_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string error_json(const std::string& uri, const Error& e) {
  return "{\"uri\":" + json_string(uri) + ",\"ok\":false,\"code\":\"" +
         std::string(error_code_name(e.code())) + "\",\"error\":" + json_string(e.to_string()) +
         "}";
}

int usage() {
  std::fprintf(stderr, "usage: io_tool get|head|stream|put [options] URI...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  io::StoreOptions options;
  io::ReadOptions range;
  bool from_stdin = false;
  long long chunk = 1 << 20;
  std::vector<std::string> args;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> long long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "io_tool: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--stdin") from_stdin = true;
    else if (a == "--offset") range.offset = next();
    else if (a == "--length") range.length = next();
    else if (a == "--chunk") chunk = next();
    else if (a == "--max-object-bytes") range.max_bytes = next();
    else if (a == "--deadline-ms") options.http.deadline = std::chrono::milliseconds(next());
    else if (a == "--attempt-timeout-ms") options.http.attempt_timeout = std::chrono::milliseconds(next());
    else if (a == "--attempts") options.http.backoff.max_attempts = static_cast<int>(next());
    else if (a == "--initial-ms") options.http.backoff.initial_delay = std::chrono::milliseconds(next());
    else if (a == "--max-delay-ms") options.http.backoff.max_delay = std::chrono::milliseconds(next());
    else if (a == "--inflight") options.http.max_requests_in_flight = static_cast<int>(next());
    else if (a == "--max-bytes") options.http.max_bytes_in_flight = next();
    else if (a == "--imds") options.imds = true;
    else if (a == "--refresh-window-ms") options.credentials.refresh_window = std::chrono::milliseconds(next());
    else if (a == "--refresh-retry-ms") options.credentials.refresh_retry = std::chrono::milliseconds(next());
    else if (a == "--process-timeout-ms") options.credentials.process_timeout = std::chrono::milliseconds(next());
    else if (a.rfind("--", 0) == 0) return usage();
    else args.push_back(a);
  }
  Result<std::unique_ptr<io::ObjectStore>> opened = io::open_store(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "io_tool: %s\n", opened.error().to_string().c_str());
    return 1;
  }
  io::ObjectStore& store = **opened;
  int failures = 0;

  if (cmd == "get") {
    std::vector<exec::Future<io::Bytes>> all;
    std::string line;
    std::vector<std::string> uris = args;
    if (from_stdin) {
      while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        uris.push_back(line);
        all.push_back(store.read(line, range));
      }
    } else {
      for (const auto& u : uris) all.push_back(store.read(u, range));
    }
    for (std::size_t k = 0; k < all.size(); ++k) {
      Result<io::Bytes>& r = all[k].get();
      if (!r.ok()) {
        ++failures;
        emit(error_json(uris[k], r.error()));
      } else {
        emit("{\"uri\":" + json_string(uris[k]) + ",\"ok\":true,\"size\":" +
             std::to_string(r->size()) + ",\"fnv\":\"" + fnv1a(*r) + "\"}");
      }
    }
  } else if (cmd == "head") {
    for (const auto& u : args) {
      Result<io::ObjectInfo> r = io::head_sync(store, u);
      if (!r.ok()) {
        ++failures;
        emit(error_json(u, r.error()));
      } else {
        emit("{\"uri\":" + json_string(u) + ",\"ok\":true,\"size\":" +
             std::to_string(r->size) + ",\"etag\":" + json_string(r->etag) + "}");
      }
    }
  } else if (cmd == "stream" && args.size() == 1) {
    std::vector<std::uint8_t> all;
    int chunks = 0, restarts = 0;
    io::ObjectInfo info;
    Status s = io::stream_object(store, args[0], chunk,
                                 [&](std::span<const std::uint8_t> c, std::int64_t at) {
                                   if (at == 0 && !all.empty()) {  // replaced: start over
                                     all.clear();
                                     ++restarts;
                                   }
                                   all.insert(all.end(), c.begin(), c.end());
                                   ++chunks;
                                   return ok_status();
                                 }, &info);
    if (!s.ok()) {
      ++failures;
      emit(error_json(args[0], s.error()));
    } else {
      emit("{\"uri\":" + json_string(args[0]) + ",\"ok\":true,\"size\":" +
           std::to_string(all.size()) + ",\"chunks\":" + std::to_string(chunks) +
           ",\"etag\":" + json_string(info.etag) + ",\"restarts\":" + std::to_string(restarts) +
           ",\"fnv\":\"" + fnv1a(all) + "\"}");
    }
  } else if (cmd == "put" && args.size() == 2) {
    Result<std::vector<std::uint8_t>> bytes = read_file(args[1]);
    if (!bytes.ok()) {
      std::fprintf(stderr, "io_tool: %s\n", bytes.error().to_string().c_str());
      return 1;
    }
    exec::Future<void> f = store.write(args[0], std::move(*bytes));
    Status& s = f.get();
    if (!s.ok()) {
      ++failures;
      emit(error_json(args[0], s.error()));
    } else {
      emit("{\"uri\":" + json_string(args[0]) + ",\"ok\":true}");
    }
  } else {
    return usage();
  }
  io::HttpClientStats st = store.stats();
  emit("{\"stats\":{\"attempts\":" + std::to_string(st.attempts) + ",\"retries\":" +
       std::to_string(st.retries) + ",\"succeeded\":" + std::to_string(st.succeeded) +
       ",\"failed\":" + std::to_string(st.failed) + ",\"peak_in_flight\":" +
       std::to_string(st.peak_in_flight) + ",\"connections\":" + std::to_string(st.connections) +
       "}}");
  return failures ? 1 : 0;
}
