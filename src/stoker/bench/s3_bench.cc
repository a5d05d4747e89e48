#include "stoker/bench/s3_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
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

// Two nginx workers (the proxy must not be the single-core ceiling either), least-connections
// over the s3rver processes, responses streamed (no temp files for large bodies).
std::string nginx_conf(const fs::path& dir, const std::vector<int>& s3_ports,
                       const std::vector<std::pair<int, int>>& listeners) {
  const std::string d = dir.string();
  std::string c = "daemon off;\nmaster_process on;\nworker_processes 2;\npid " + d + "/nginx.pid;\n";
  c += "error_log " + d + "/nginx-error.log warn;\n";
  c += "load_module /usr/lib/nginx/modules/ndk_http_module.so;\n";
  c += "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;\n";
  c += "events { worker_connections 4096; }\nhttp {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c += std::string("  ") + t + "_temp_path " + d + "/tmp_" + t + ";\n";
  c += "  upstream s3 {\n    least_conn;\n";
  for (int p : s3_ports) c += "    server 127.0.0.1:" + std::to_string(p) + ";\n";
  c += "    keepalive 512;\n  }\n";
  for (auto [port, delay_ms] : listeners) {
    c += "  server {\n    listen 127.0.0.1:" + std::to_string(port) + " backlog=4096;\n";
    c += "    keepalive_requests 100000;\n    client_max_body_size 0;\n    location / {\n";
    if (delay_ms > 0)
      c += format("      access_by_lua_block { ngx.sleep(%.3f) }\n", delay_ms / 1000.0);
    // The Host header passes unchanged: the client signed for the proxy's host:port.
    c += "      proxy_pass http://s3;\n      proxy_http_version 1.1;\n";
    c += "      proxy_set_header Connection \"\";\n      proxy_set_header Host $http_host;\n";
    c += "      proxy_buffering off;\n      proxy_request_buffering off;\n";
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

// A set of objects whose bytes are windows of one random pattern: object i is `bytes` bytes
// from offset (i · 4099) mod 65536 (4099 is odd: distinct offsets for i < 65536). Both sides
// rebuild the expected bytes from the pattern and compare whole bodies, without holding the set.
struct ObjectSet {
  std::string name;
  int n = 0;
  std::size_t bytes = 0;
  int per_run = 0;
  io::Bytes pattern;  // bytes + 65536
  fs::path pattern_file;

  static std::size_t shift(int i) { return (static_cast<std::size_t>(i) * 4099) % 65536; }
  std::span<const std::uint8_t> object(int i) const {
    return {pattern.data() + shift(i), bytes};
  }
  std::string key(int i) const { return name + "/" + std::to_string(i); }
};

ObjectSet make_set(const std::string& name, int n, std::size_t bytes, int per_run,
                   std::uint64_t seed) {
  ObjectSet s{.name = name, .n = n, .bytes = bytes, .per_run = per_run};
  s.pattern.resize(bytes + 65536);
  std::uint64_t x = seed;
  for (auto& b : s.pattern)
    b = static_cast<std::uint8_t>((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
  return s;
}

// The servers' processes and their CPU so far; a timed run takes one snapshot before and one
// after, the machine's idle time with them (/proc/stat).
struct ServerCpu {
  std::map<pid_t, double> s3rver, nginx;
  double idle_s = 0, total_s = 0;  // the machine's (all cores), from /proc/stat
};

struct RunCpu {  // what the servers used during one run
  double busiest = 0;     // the busiest s3rver process, share of one core
  double s3rver = 0;      // all s3rver processes, cores
  double nginx = 0;       // nginx, cores
  double idle = 0;        // the machine's idle share
  void max_with(const RunCpu& o) {
    busiest = std::max(busiest, o.busiest);
    s3rver = std::max(s3rver, o.s3rver);
    nginx = std::max(nginx, o.nginx);
    idle = idle == 0 ? o.idle : std::min(idle, o.idle);
  }
};

void machine_cpu(double* idle, double* total) {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double v[10] = {};
  f >> cpu;
  for (double& x : v) f >> x;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  *idle = (v[3] + v[4]) / tick;
  *total = 0;
  for (int i = 0; i < 8; ++i) *total += v[i] / tick;  // guest time is inside user
}

struct Servers {
  std::vector<Server> s3rvers;
  Server nginx;
  std::vector<int> s3_ports;
  std::vector<std::pair<int, int>> listeners;  // (port, added ms)

  ServerCpu snapshot() const {
    ServerCpu c;
    for (const Server& s : s3rvers)
      for (auto [pid, cpu] : group_cpu_s(s.group())) c.s3rver[pid] = cpu;
    c.nginx = group_cpu_s(nginx.group());
    machine_cpu(&c.idle_s, &c.total_s);
    return c;
  }
  std::vector<int> groups() const {
    std::vector<int> g;
    for (const Server& s : s3rvers) g.push_back(static_cast<int>(s.group()));
    g.push_back(static_cast<int>(nginx.group()));
    return g;
  }
};

RunCpu used(const ServerCpu& a, const ServerCpu& b, double wall_s) {
  RunCpu r;
  for (auto [pid, cpu] : b.s3rver) {
    auto it = a.s3rver.find(pid);
    const double d = cpu - (it == a.s3rver.end() ? 0 : it->second);
    r.s3rver += d / wall_s;
    r.busiest = std::max(r.busiest, d / wall_s);
  }
  for (auto [pid, cpu] : b.nginx) {
    auto it = a.nginx.find(pid);
    r.nginx += (cpu - (it == a.nginx.end() ? 0 : it->second)) / wall_s;
  }
  const double total = b.total_s - a.total_s;
  r.idle = total > 0 ? (b.idle_s - a.idle_s) / total : 0;
  return r;
}

struct Run {
  double wall_s = 0, cpu_s = 0;  // the best run (by wall) and the client's CPU in it
  int objects = 0;
  RunCpu servers;                // the most the servers used in any timed run
  double per_s() const { return objects / wall_s; }
};

// stoker's side: `per_run` objects (run r starts at key (7 + 31 r) mod n), at most `in_flight`
// requests and `max_bytes` of bodies in flight at once (the Loader's fetch budget, 256 MB by
// default, binds for large objects), every body compared with the expected bytes.
Result<Run> measure_stoker(const Servers& servers, int port, int in_flight, std::size_t max_bytes,
                           const Repeat& repeat, const ObjectSet& set, Comparison* cmp) {
  io::HttpClientOptions options;
  options.max_requests_in_flight = in_flight;
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::HttpClient> client, io::HttpClient::create(options));
  auto store = io::make_s3_store(std::shared_ptr<io::HttpClient>(std::move(client)), s3_config(port));
  const int window = static_cast<int>(std::clamp<std::size_t>(max_bytes / set.bytes, 1,
                                                              static_cast<std::size_t>(in_flight)));
  Run best;
  RunCpu worst;
  for (int run = 0; run < repeat.warmup + repeat.passes; ++run) {
    const int first = (7 + 31 * run) % set.n;
    const ServerCpu s0 = servers.snapshot();
    const double c0 = process_cpu_s();
    const Stopwatch sw;
    std::deque<exec::Future<io::Bytes>> futures;
    int issued = 0;
    for (int done = 0; done < set.per_run; ++done) {
      while (issued < set.per_run && static_cast<int>(futures.size()) < window)
        futures.push_back(store->read("s3://bench/" + set.key((first + issued++) % set.n)));
      Result<io::Bytes>& r = futures.front().get();
      if (!r.ok()) return r.error();
      const int k = (first + done) % set.n;
      const std::span<const std::uint8_t> want = set.object(k);
      cmp->compared();
      if (r->size() != want.size() || std::memcmp(r->data(), want.data(), want.size()) != 0)
        cmp->differ("stoker: " + set.key(k) + " has different bytes");
      futures.pop_front();
    }
    const Run t{sw.elapsed_s(), process_cpu_s() - c0, set.per_run};
    if (run < repeat.warmup) continue;
    worst.max_with(used(s0, servers.snapshot(), t.wall_s));
    if (best.objects == 0 || t.wall_s < best.wall_s) best = t;
  }
  best.servers = worst;
  return best;
}

// The peer: bench/s3_peer.py (boto3) with `workers` threads; it checks every body itself (a
// difference exits 1) and reads the servers' CPU around each timed run.
Result<Run> measure_boto3(const S3BenchOptions& o, const Servers& servers, int port, int workers,
                          const Repeat& repeat, const ObjectSet& set, Comparison* cmp) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("s3_peer.py"));
  std::string groups;
  for (int g : servers.groups()) groups += (groups.empty() ? "" : ",") + std::to_string(g);
  auto out = run_capture({o.python, script.string(), "--endpoint",
                          "http://127.0.0.1:" + std::to_string(port), "--prefix", set.name,
                          "--pattern", set.pattern_file.string(), "--n", std::to_string(set.n),
                          "--size", std::to_string(set.bytes), "--count",
                          std::to_string(set.per_run), "--workers", std::to_string(workers),
                          "--warmup", std::to_string(repeat.warmup), "--passes",
                          std::to_string(repeat.passes), "--server-groups", groups,
                          "--s3rver-groups",
                          std::to_string(servers.s3rvers.size())});
  if (!out.ok()) {  // a byte difference is a peer exit 1 with the object named on stderr
    cmp->differ("boto3 (" + std::to_string(workers) + " threads): " + out.error().to_string());
    return Run{1e300, 0, set.per_run, {}};
  }
  const auto j = nlohmann::json::parse(last_json_line(*out), nullptr, false);
  if (j.is_discarded() || !j.contains("wall_s")) return internal_error("bad peer output: " + *out);
  cmp->compared(j.value("checked", 0));
  Run r{j["wall_s"].get<double>(), j["cpu_s"].get<double>(), set.per_run, {}};
  r.servers.busiest = j.value("servers_busiest", 0.0);
  r.servers.s3rver = j.value("servers_s3rver", 0.0);
  r.servers.nginx = j.value("servers_nginx", 0.0);
  r.servers.idle = j.value("machine_idle", 0.0);
  return r;
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

// `count` s3rver processes on one store (its filesystem layout is stateless: each request
// reads the files), nginx in front.
Status start_servers(const fs::path& dir, const fs::path& launcher, const fs::path& node_modules,
                     int count, const std::vector<int>& delays, Servers* s) {
  for (int i = 0; i < count; ++i) s->s3_ports.push_back(io::unused_loopback_port());
  for (int d : delays) s->listeners.push_back({io::unused_loopback_port(), d});
  fs::create_directories(dir / "s3");
  for (int i = 0; i < count; ++i) {
    // `timeout` bounds each server even if this process is SIGKILLed.
    STOKER_ASSIGN_OR_RETURN(
        Server srv, Server::start({"timeout", "1800", "node", launcher.string(), "-d",
                                   (dir / "s3").string(), "-a", "127.0.0.1", "-p",
                                   std::to_string(s->s3_ports[static_cast<std::size_t>(i)]), "-s",
                                   "--configure-bucket", "bench"},
                                  (dir / ("s3rver-" + std::to_string(i) + ".log")).string(),
                                  {"NODE_OPTIONS=--openssl-legacy-provider",
                                   "NODE_PATH=" + node_modules.string()}));
    s->s3rvers.push_back(std::move(srv));
  }
  STOKER_RETURN_IF_ERROR(write_text_file((dir / "nginx.conf").string(),
                                         nginx_conf(dir, s->s3_ports, s->listeners)));
  const std::string nginx = have_program("nginx") ? "nginx" : "/usr/sbin/nginx";
  STOKER_ASSIGN_OR_RETURN(
      s->nginx, Server::start({"timeout", "1800", nginx, "-p", dir.string(), "-c",
                               (dir / "nginx.conf").string(), "-e",
                               (dir / "nginx-error.log").string()},
                              (dir / "nginx.log").string()));
  for (int i = 0; i < count; ++i) {
    STOKER_RETURN_IF_ERROR(s->s3rvers[static_cast<std::size_t>(i)].wait_for_port(
        s->s3_ports[static_cast<std::size_t>(i)], "s3rver"));
  }
  for (auto [port, d] : s->listeners) STOKER_RETURN_IF_ERROR(s->nginx.wait_for_port(port, "nginx"));
  return ok_status();
}

// Uploads a set through stoker's own PUT, spread over the s3rver processes, at most 32 bodies
// in flight; writes its pattern for the peer.
Status seed(const std::vector<int>& s3_ports, const ObjectSet& set) {
  STOKER_ASSIGN_OR_RETURN(auto client, io::HttpClient::create({}));
  std::shared_ptr<io::HttpClient> shared(std::move(client));
  std::vector<std::unique_ptr<io::ObjectStore>> stores;
  for (int p : s3_ports) stores.push_back(io::make_s3_store(shared, s3_config(p)));
  STOKER_RETURN_IF_ERROR(write_file(set.pattern_file.string(), set.pattern));
  std::deque<exec::Future<void>> puts;
  for (int i = 0; i < set.n; ++i) {
    const std::span<const std::uint8_t> obj = set.object(i);
    puts.push_back(stores[static_cast<std::size_t>(i) % stores.size()]->write(
        "s3://bench/" + set.key(i), io::Bytes(obj.begin(), obj.end())));
    while (puts.size() >= 32 || (i + 1 == set.n && !puts.empty())) {
      if (!puts.front().get().ok()) return Error(puts.front().get().error()).with_context("seeding");
      puts.pop_front();
    }
  }
  return ok_status();
}

std::string size_text(std::size_t bytes) {
  return bytes >= 1000000 ? format("%.0f MB", bytes / 1e6) : format("%.0f KB", bytes / 1e3);
}

}  // namespace

Result<Outcome> run_s3_bench(const S3BenchOptions& opt_in) {
  S3BenchOptions o = opt_in;
  if (o.concurrency <= 0) o.concurrency = io::HttpClientOptions{}.max_requests_in_flight;
  if (o.peer_workers.empty()) o.peer_workers = {16, 64};
  if (o.delays_ms.empty()) o.delays_ms = {50, 200};
  if (o.repeat.passes <= 0) o.repeat.passes = o.quick ? 2 : 3;
  if (o.small_objects <= 0) o.small_objects = o.quick ? 2000 : 10000;
  if (o.per_run <= 0) o.per_run = std::min(o.small_objects, o.quick ? 1000 : 2000);
  if (o.large_objects == 0) o.large_objects = o.quick ? 24 : 100;  // < 0: no large set
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
  Servers servers;
  STOKER_RETURN_IF_ERROR(start_servers(dir.path(), *launcher, *node_modules, o.s3rvers,
                                       o.delays_ms, &servers));
  std::vector<ObjectSet> sets;
  sets.push_back(make_set("small", o.small_objects, static_cast<std::size_t>(o.size_kb) * 1000,
                          o.per_run, 0x243f6a8885a308d3ull));
  if (o.large_objects > 0) {
    sets.push_back(make_set("large", o.large_objects, static_cast<std::size_t>(o.large_mb) << 20,
                            o.large_objects, 0x13198a2e03707344ull));
  }
  const Stopwatch seeding;
  for (ObjectSet& s : sets) {
    s.pattern_file = fs::path(dir.path()) / ("pattern-" + s.name);
    STOKER_RETURN_IF_ERROR(seed(servers.s3_ports, s));
  }
  const std::size_t fetch_budget = std::size_t{256} << 20;  // LoaderConfig's default
  std::printf("stoker bench s3: %d s3rver processes (one store) behind nginx (2 workers) adding "
              "latency per request (loopback); sets:", o.s3rvers);
  for (const ObjectSet& s : sets)
    std::printf(" %s = %d objects of %s, %d fetched per run;", s.name.c_str(), s.n,
                size_text(s.bytes).c_str(), s.per_run);
  std::printf(" seeded in %.1f s; %s; every body compared\n", seeding.elapsed_s(),
              o.repeat.text().c_str());
  std::printf("stoker: io::ObjectStore (libcurl multi), %d requests and at most %zu MB of bodies "
              "in flight (the Loader's fetch budget); peer: boto3 get_object(...).read() in a "
              "ThreadPoolExecutor of W threads sharing one client (max_pool_connections = W), W "
              "in {", o.concurrency, fetch_budget >> 20);
  for (std::size_t i = 0; i < o.peer_workers.size(); ++i)
    std::printf("%s%d", i ? ", " : "", o.peer_workers[i]);
  std::printf("}: the fastest W is the peer\n");
  std::fflush(stdout);

  Comparison cmp;
  Table t({{"set", 5, true}, {"latency", 7}, {"who", 20, true}, {"objects/s", 9}, {"MB/s", 7},
           {"CPU ms/obj", 10}, {"vs boto3", 8}, {"s3rver max", 10}, {"s3rvers", 7},
           {"nginx", 5}, {"idle", 5}});
  t.header(stdout);
  double head_ratio = 0;
  bool server_bound = false;
  std::vector<std::string> verdicts;
  for (const ObjectSet& set : sets) {
    for (auto [port, delay] : servers.listeners) {
      STOKER_ASSIGN_OR_RETURN(Run s, measure_stoker(servers, port, o.concurrency, fetch_budget,
                                                    o.repeat, set, &cmp));
      Run best_peer{1e300, 0, set.per_run, {}};
      int best_w = 0;
      std::vector<std::pair<int, Run>> peers;
      for (int w : o.peer_workers) {
        STOKER_ASSIGN_OR_RETURN(Run p, measure_boto3(o, servers, port, w, o.repeat, set, &cmp));
        peers.push_back({w, p});
        if (p.wall_s < best_peer.wall_s) best_peer = p, best_w = w;
      }
      auto row = [&](const std::string& who, const Run& r, const std::string& vs) {
        server_bound = server_bound || r.servers.busiest > 0.7;
        t.row(stdout, {set.name, format("%d ms", delay), who, format("%.1f", r.per_s()),
                       format("%.1f", r.per_s() * static_cast<double>(set.bytes) / 1e6),
                       format("%.3f", 1e3 * r.cpu_s / r.objects), vs,
                       format("%.0f%%%s", 100 * r.servers.busiest,
                              r.servers.busiest > 0.7 ? "!" : ""),
                       format("%.2f", r.servers.s3rver), format("%.2f", r.servers.nginx),
                       format("%.0f%%", 100 * r.servers.idle)});
      };
      row(format("stoker (%d in flight)", std::min(o.concurrency, static_cast<int>(std::max<std::size_t>(1, fetch_budget / set.bytes)))),
          s, format("%.2fx", s.per_s() / best_peer.per_s()));
      for (auto& [w, p] : peers) row(format("boto3 (%d threads)", w), p, "");
      std::fflush(stdout);
      const double cpu_ratio = (s.cpu_s / s.objects) / (best_peer.cpu_s / best_peer.objects);
      verdicts.push_back(format("%s objects at %d ms: stoker %.2fx the fastest boto3 (%d threads), "
                                "CPU per object %.2fx (%.3f vs %.3f ms)",
                                set.name.c_str(), delay, s.per_s() / best_peer.per_s(), best_w,
                                cpu_ratio, 1e3 * s.cpu_s / s.objects,
                                1e3 * best_peer.cpu_s / best_peer.objects));
      if (set.name == "small") head_ratio = s.per_s() / best_peer.per_s();  // largest latency last
    }
  }
  std::printf("columns: CPU ms/obj = the fetching process's CPU (all its threads) per object in "
              "the best run; the servers' use is the most any timed run of that row saw: the "
              "busiest s3rver process (%% of one core; node runs one thread), all s3rver "
              "processes and nginx (cores), the machine's idle share (%d CPUs, load average "
              "%.1f now)\n", usable_cores(), load_average());
  for (const std::string& v : verdicts) std::printf("%s\n", v.c_str());
  if (server_bound) {
    std::printf("SERVER-BOUND: an s3rver process used over 70%% of a core in some timed run "
                "(marked !): there the ratio measures the servers as much as the clients\n");
  }
  std::printf("total %.1f s\n", total.elapsed_s());
  return finish(cmp, "object bodies (both sides, every run)",
                format("boto3 + ThreadPoolExecutor (fastest W), small objects at %d ms",
                       servers.listeners.back().second),
                head_ratio);
}

}  // namespace stoker::bench
