#include "stoker/bench/s3_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/io/loopback.h"
#include "stoker/io/object_store.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

std::string nginx_conf(const fs::path& dir, int s3_port,
                       const std::vector<std::pair<int, int>>& listeners) {
  const std::string d = dir.string();
  std::string c = "daemon off;\nmaster_process off;\npid " + d + "/nginx.pid;\n";
  c += "error_log " + d + "/nginx-error.log warn;\n";
  c += "load_module /usr/lib/nginx/modules/ndk_http_module.so;\n";
  c += "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;\n";
  c += "events { worker_connections 4096; }\nhttp {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c += std::string("  ") + t + "_temp_path " + d + "/tmp_" + t + ";\n";
  c += "  upstream s3 { server 127.0.0.1:" + std::to_string(s3_port) + "; keepalive 512; }\n";
  for (auto [port, delay_ms] : listeners) {
    c += "  server {\n    listen 127.0.0.1:" + std::to_string(port) + " backlog=1024;\n";
    c += "    keepalive_requests 100000;\n    location / {\n";
    if (delay_ms > 0)
      c += format("      access_by_lua_block { ngx.sleep(%.3f) }\n", delay_ms / 1000.0);
    // The Host header passes unchanged: the client signed for the proxy's host:port.
    c += "      proxy_pass http://s3;\n      proxy_http_version 1.1;\n";
    c += "      proxy_set_header Connection \"\";\n      proxy_set_header Host $http_host;\n";
    c += "    }\n  }\n";
  }
  return c + "}\n";
}

io::AwsConfig s3_config(int port) {
  io::AwsConfig aws;
  aws.access_key_id = "S3RVER";
  aws.secret_access_key = "S3RVER";
  aws.endpoint = "http://127.0.0.1:" + std::to_string(port);
  aws.path_style = true;
  return aws;
}

struct Run {
  double wall_s = 0, cpu_s = 0;  // the best run (by wall) and this process's CPU in it
  int objects = 0;
  double per_s() const { return objects / wall_s; }
};

// stoker's side: `count` objects (run r starts at key (7 + 31 r) mod n), at most `in_flight`
// requests at once, every body compared with what was uploaded; `warmup` untimed runs, then
// `passes` timed ones, the fastest counts (as the peer does).
Result<Run> measure_stoker(int port, int in_flight, int count, const Repeat& repeat,
                           const std::vector<io::Bytes>& objects, Comparison* cmp) {
  io::HttpClientOptions options;
  options.max_requests_in_flight = in_flight;
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::HttpClient> client, io::HttpClient::create(options));
  auto store = io::make_s3_store(std::shared_ptr<io::HttpClient>(std::move(client)), s3_config(port));
  const std::size_t n = objects.size();
  Run best;
  for (int run = 0; run < repeat.warmup + repeat.passes; ++run) {
    const std::size_t first = (7 + 31 * static_cast<std::size_t>(run)) % n;
    const double c0 = process_cpu_s();
    const Stopwatch sw;
    std::vector<exec::Future<io::Bytes>> futures;
    futures.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
      futures.push_back(store->read("s3://bench/obj/" + std::to_string((first + i) % n)));
    for (int i = 0; i < count; ++i) {
      Result<io::Bytes>& r = futures[static_cast<std::size_t>(i)].get();
      if (!r.ok()) return r.error();
      cmp->compared();
      if (*r != objects[(first + i) % n])
        cmp->differ("stoker: obj/" + std::to_string((first + i) % n) + " has different bytes");
    }
    const Run t{sw.elapsed_s(), process_cpu_s() - c0, count};
    if (run >= repeat.warmup && (best.objects == 0 || t.wall_s < best.wall_s)) best = t;
  }
  return best;
}

// The peer: bench/s3_peer.py (boto3) with `workers` threads; it checks every body itself and
// fails on a difference.
Result<Run> measure_boto3(const S3BenchOptions& o, int port, int workers, int count,
                          const Repeat& repeat, const fs::path& expected, Comparison* cmp) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("s3_peer.py"));
  auto out = run_capture({o.python, script.string(), "--endpoint",
                          "http://127.0.0.1:" + std::to_string(port), "--expected",
                          expected.string(), "--count", std::to_string(count), "--workers",
                          std::to_string(workers), "--warmup", std::to_string(repeat.warmup),
                          "--passes", std::to_string(repeat.passes)});
  if (!out.ok()) {  // a byte difference is a peer exit 1 with the object named on stderr
    cmp->differ("boto3 (" + std::to_string(workers) + " threads): " + out.error().to_string());
    return Run{1e300, 0, count};
  }
  const auto j = nlohmann::json::parse(last_json_line(*out), nullptr, false);
  if (j.is_discarded() || !j.contains("wall_s")) return internal_error("bad peer output: " + *out);
  cmp->compared(j.value("checked", 0));
  return Run{j["wall_s"].get<double>(), j["cpu_s"].get<double>(), count};
}

std::string missing_prerequisite(const fs::path& node_modules, const std::string& python) {
  if (!have_program("node")) return "node is not installed";
  if (!fs::exists(node_modules / "@20minutes" / "s3rver"))
    return "npm @20minutes/s3rver is not installed in " + node_modules.string();
  if ((!have_program("nginx") && !have_program("/usr/sbin/nginx")) ||
      !fs::exists("/usr/lib/nginx/modules/ngx_http_lua_module.so"))
    return "nginx with the lua module is missing: apt-get install -y nginx-light "
           "libnginx-mod-http-lua";
  if (!run_capture({python, "-c", "import boto3"}).ok())
    return "boto3 is not importable by " + python + " (apt-get install -y python3-boto3)";
  return {};
}

struct Servers {
  Server s3rver, nginx;
  int s3_port = 0;
  std::vector<std::pair<int, int>> listeners;  // (port, added ms)
};

Status start_servers(const fs::path& dir, const fs::path& launcher,
                     const fs::path& node_modules, const std::vector<int>& delays, Servers* s) {
  s->s3_port = io::unused_loopback_port();
  for (int d : delays) s->listeners.push_back({io::unused_loopback_port(), d});
  fs::create_directories(dir / "s3");
  // `timeout` bounds each server even if this process is SIGKILLed.
  STOKER_ASSIGN_OR_RETURN(
      s->s3rver, Server::start({"timeout", "900", "node", launcher.string(), "-d",
                                (dir / "s3").string(), "-a", "127.0.0.1", "-p",
                                std::to_string(s->s3_port), "-s", "--configure-bucket", "bench"},
                               (dir / "s3rver.log").string(),
                               {"NODE_OPTIONS=--openssl-legacy-provider",
                                "NODE_PATH=" + node_modules.string()}));
  STOKER_RETURN_IF_ERROR(write_text_file((dir / "nginx.conf").string(),
                                         nginx_conf(dir, s->s3_port, s->listeners)));
  const std::string nginx = have_program("nginx") ? "nginx" : "/usr/sbin/nginx";
  STOKER_ASSIGN_OR_RETURN(
      s->nginx, Server::start({"timeout", "900", nginx, "-p", dir.string(), "-c",
                               (dir / "nginx.conf").string(), "-e",
                               (dir / "nginx-error.log").string()},
                              (dir / "nginx.log").string()));
  STOKER_RETURN_IF_ERROR(s->s3rver.wait_for_port(s->s3_port, "s3rver"));
  for (auto [port, d] : s->listeners) STOKER_RETURN_IF_ERROR(s->nginx.wait_for_port(port, "nginx"));
  return ok_status();
}

// Uploads the objects through stoker's own PUT and writes them to `expected` for the peer.
Status seed(int s3_port, const std::vector<io::Bytes>& objects, const fs::path& expected) {
  STOKER_ASSIGN_OR_RETURN(auto client, io::HttpClient::create({}));
  auto store = io::make_s3_store(std::shared_ptr<io::HttpClient>(std::move(client)), s3_config(s3_port));
  fs::create_directories(expected);
  std::vector<exec::Future<void>> puts;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    puts.push_back(store->write("s3://bench/obj/" + std::to_string(i), objects[i]));
    STOKER_RETURN_IF_ERROR(write_file((expected / std::to_string(i)).string(), objects[i]));
  }
  for (auto& f : puts)
    if (!f.get().ok()) return Error(f.get().error()).with_context("seeding");
  return ok_status();
}

}  // namespace

Result<Outcome> run_s3_bench(const S3BenchOptions& opt_in) {
  S3BenchOptions o = opt_in;
  if (o.concurrency <= 0) o.concurrency = io::HttpClientOptions{}.max_requests_in_flight;
  if (o.peer_workers.empty()) o.peer_workers = {16, 64};
  if (o.repeat.passes <= 0) o.repeat.passes = o.quick ? 2 : 3;
  auto launcher = find_bench_file("s3rver_launch.js");
  auto node_modules = find_bench_file("node_modules");
  if (!launcher.ok()) return launcher.error();
  std::string missing = node_modules.ok() ? missing_prerequisite(*node_modules, o.python)
                                          : node_modules.error().to_string();
  if (!missing.empty()) {
    std::fprintf(stderr, "stoker bench s3: skipped: %s\n", missing.c_str());
    return Outcome::kSkipped;
  }
  const Stopwatch total;
  STOKER_ASSIGN_OR_RETURN(TempDir dir, TempDir::make("stoker-bench-s3"));
  const std::vector<int> delays = o.quick ? std::vector<int>{0, 50} : std::vector<int>{0, 20, 50};
  Servers servers;
  STOKER_RETURN_IF_ERROR(start_servers(dir.path(), *launcher, *node_modules, delays, &servers));

  const int n_objects = o.quick ? 200 : 500;
  const std::size_t object_bytes = static_cast<std::size_t>(o.size_kb) * 1000;
  std::vector<io::Bytes> objects(static_cast<std::size_t>(n_objects), io::Bytes(object_bytes));
  std::uint64_t x = 0x243f6a8885a308d3ull;
  for (auto& obj : objects)
    for (auto& b : obj)
      b = static_cast<std::uint8_t>((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
  const fs::path expected = fs::path(dir.path()) / "expected";
  STOKER_RETURN_IF_ERROR(seed(servers.s3_port, objects, expected));

  const int count = o.quick ? 400 : 1000;
  std::printf("stoker bench s3: %d objects of %zu KB on s3rver behind an nginx delaying proxy "
              "(loopback); %d fetches per run, %s, every body compared with the upload\n",
              n_objects, object_bytes / 1000, count, o.repeat.text().c_str());
  std::printf("stoker: io::ObjectStore (libcurl multi), %d requests in flight; peer: boto3 "
              "get_object(...).read() in a ThreadPoolExecutor of W threads sharing one client "
              "(max_pool_connections = W), W in {", o.concurrency);
  for (std::size_t i = 0; i < o.peer_workers.size(); ++i)
    std::printf("%s%d", i ? ", " : "", o.peer_workers[i]);
  std::printf("}: the fastest W is the peer\n");
  std::fflush(stdout);

  Comparison cmp;
  Table t({{"added latency", 13}, {"who", 24, true}, {"objects/s", 9}, {"MB/s", 7},
           {"CPU ms/object", 13}, {"vs best boto3", 13}});
  t.header(stdout);
  double head_ratio = 0;
  for (auto [port, delay] : servers.listeners) {
    STOKER_ASSIGN_OR_RETURN(Run s, measure_stoker(port, o.concurrency, count, o.repeat, objects, &cmp));
    Run best_peer{1e300, 0, count};
    std::vector<std::pair<int, Run>> peers;
    for (int w : o.peer_workers) {
      STOKER_ASSIGN_OR_RETURN(Run p, measure_boto3(o, port, w, count, o.repeat, expected, &cmp));
      peers.push_back({w, p});
      if (p.wall_s < best_peer.wall_s) best_peer = p;
    }
    auto row = [&](const std::string& who, const Run& r, const std::string& vs) {
      t.row(stdout, {format("%d ms", delay), who, format("%.1f", r.per_s()),
                     format("%.1f", r.per_s() * static_cast<double>(object_bytes) / 1e6),
                     format("%.2f", 1e3 * r.cpu_s / r.objects), vs});
    };
    row(format("stoker (%d in flight)", o.concurrency), s,
        format("%.2fx", s.per_s() / best_peer.per_s()));
    for (auto& [w, p] : peers) row(format("boto3 (%d threads)", w), p, "");
    std::fflush(stdout);
    head_ratio = s.per_s() / best_peer.per_s();  // the last row is the largest latency
  }
  std::printf("at %d ms: stoker %.2fx the fastest boto3 configuration\n", delays.back(), head_ratio);
  std::printf("CPU ms/object: the fetching process's CPU time (all its threads) per object; the "
              "servers (s3rver, nginx) are separate processes\n");
  std::printf("total %.1f s\n", total.elapsed_s());
  return finish(cmp, "object bodies (both sides, every run)",
                "boto3 + ThreadPoolExecutor (fastest W)", head_ratio);
}

}  // namespace stoker::bench
