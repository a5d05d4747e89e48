#include "stoker/bench/sources_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/io/loopback.h"
#include "stoker/pipeline/loader.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

// Static files of `root`, each request held `delay_ms` first (nginx + lua: the s3 bench's
// delaying proxy, here in front of the files themselves). Range and ETag/If-Match: nginx's own.
std::string nginx_conf(const fs::path& dir, const fs::path& root, int port, int delay_ms) {
  const std::string d = dir.string();
  std::string c = "daemon off;\nmaster_process on;\nworker_processes 2;\npid " + d + "/nginx.pid;\n";
  c += "error_log " + d + "/nginx-error.log warn;\n";
  c += "load_module /usr/lib/nginx/modules/ndk_http_module.so;\n";
  c += "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;\n";
  c += "events { worker_connections 4096; }\nhttp {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c += std::string("  ") + t + "_temp_path " + d + "/tmp_" + t + ";\n";
  c += "  server {\n    listen 127.0.0.1:" + std::to_string(port) + " backlog=4096;\n";
  c += "    keepalive_requests 100000;\n    location / {\n      root " + root.string() + ";\n";
  if (delay_ms > 0) c += format("      access_by_lua_block { ngx.sleep(%.3f) }\n", delay_ms / 1000.0);
  c += "    }\n  }\n}\n";
  return c;
}

struct Pass {
  double wall_s = 0, cpu_s = 0, first_s = 0;
  std::int64_t samples = 0;
  std::vector<std::string> digests;  // sorted "rows:crc32" per image
};

struct Row {
  std::string form, where;
  std::vector<Pass> stoker, peer;
  bool has_peer = false;
};

// One Loader pass over `data`: create, every batch taken; each image's pixel_values digested on
// this thread (that CPU is taken out of the Loader's).
Result<Pass> stoker_pass(const std::string& data, const fs::path& cache, int threads) {
  pipeline::LoaderConfig c;
  c.model = "qwen2-vl";
  c.data = {data};
  c.batch_size = 8;
  c.threads = threads;
  c.seed = 1;
  c.cache_dir = cache.string();
  Pass p;
  double digest_cpu = 0;
  const double cpu0 = process_cpu_s();
  const Stopwatch wall;
  STOKER_ASSIGN_OR_RETURN(auto loader, pipeline::Loader::create(c));
  for (;;) {
    STOKER_ASSIGN_OR_RETURN(auto b, loader->next());
    if (!b) break;
    if (p.samples == 0) p.first_s = wall.elapsed_s();
    const double d0 = thread_cpu_s();
    p.samples += b->size();
    const auto* pv = b->as<float>("pixel_values");
    const auto* grid = b->as<std::int64_t>("image_grid_thw");
    const batch::TensorView* pv_view = b->layout().find("pixel_values");
    const batch::TensorView* grid_view = b->layout().find("image_grid_thw");
    if (pv != nullptr && grid != nullptr && pv_view != nullptr && grid_view != nullptr) {
      const std::int64_t cols = pv_view->shape[1];
      std::int64_t row = 0;
      for (std::int64_t i = 0; i < grid_view->shape[0]; ++i) {
        const std::int64_t n = grid[3 * i] * grid[3 * i + 1] * grid[3 * i + 2];
        const std::uint32_t crc = crc32(pv + row * cols, static_cast<std::size_t>(n * cols) * sizeof(float));
        p.digests.push_back(std::to_string(n) + ":" + std::to_string(crc));
        row += n;
      }
    }
    digest_cpu += thread_cpu_s() - d0;
  }
  loader.reset();
  p.wall_s = wall.elapsed_s();
  p.cpu_s = process_cpu_s() - cpu0 - digest_cpu;
  std::sort(p.digests.begin(), p.digests.end());
  return p;
}

Result<std::vector<Pass>> peer_passes(const SourcesBenchOptions& o, const std::string& form,
                                      const std::vector<std::string>& data, int passes) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("sources_peer.py"));
  std::vector<std::string> argv = {o.python, script.string(), "--form", form, "--model", "qwen2-vl",
                                   "--workers", std::to_string(o.threads), "--warmup",
                                   std::to_string(o.repeat.warmup), "--passes", std::to_string(passes)};
  for (const std::string& d : data) {
    argv.push_back("--data");
    argv.push_back(d);
  }
  STOKER_ASSIGN_OR_RETURN(std::string out, run_capture(argv, single_thread_env()));
  const auto j = nlohmann::json::parse(last_json_line(out), nullptr, false);
  if (j.is_discarded() || !j.contains("passes")) return internal_error("sources_peer.py printed no result");
  std::vector<Pass> r;
  for (const auto& x : j["passes"]) {
    Pass p;
    p.wall_s = x["wall_s"].get<double>();
    p.cpu_s = x["cpu_s"].get<double>();
    p.first_s = x["first_s"].get<double>();
    p.samples = x["samples"].get<std::int64_t>();
    p.digests = x["digests"].get<std::vector<std::string>>();
    r.push_back(std::move(p));
  }
  return r;
}

double best_wall(const std::vector<Pass>& v) {
  double b = 0;
  for (const Pass& p : v) b = b == 0 ? p.wall_s : std::min(b, p.wall_s);
  return b;
}
double best_cpu(const std::vector<Pass>& v) {
  double b = 0;
  for (const Pass& p : v) b = b == 0 ? p.cpu_s : std::min(b, p.cpu_s);
  return b;
}
double best_first(const std::vector<Pass>& v) {
  double b = 0;
  for (const Pass& p : v) b = b == 0 ? p.first_s : std::min(b, p.first_s);
  return b;
}

}  // namespace

Result<Outcome> run_sources_bench(const SourcesBenchOptions& opts) {
  SourcesBenchOptions o = opts;
  if (o.records <= 0) o.records = o.quick ? 64 : 256;
  if (o.max_side <= 0) o.max_side = o.quick ? 384 : 768;
  if (o.repeat.passes <= 0) o.repeat.passes = o.quick ? 2 : 3;
  if (!have_program(o.python)) {
    std::printf("skipped: %s not found\n", o.python.c_str());
    return Outcome::kSkipped;
  }
  const fs::path dir = fs::temp_directory_path() / ("stoker-bench-sources-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir / "nginx");
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(d, e);
    }
  } cleanup{dir};
  const fs::path data = dir / "data";
  const Stopwatch gen;
  std::error_code self_ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", self_ec);
  STOKER_ASSIGN_OR_RETURN(std::string synth_out,
                          run_capture({self.string(), "synth", "--out", data.string(), "--n",
                                       std::to_string(o.records), "--seed", "1", "--max-side",
                                       std::to_string(o.max_side), "--shards", std::to_string(o.shards)}));
  (void)synth_out;
  std::printf("stoker bench sources: %d synth records (max side %d px) as JSONL + files, %d WebDataset "
              "shards, an Energon folder (%.1f s to write); %s build; stoker: Loader, batch 8, %d CPU "
              "threads; peer: %s sources_peer.py, %d worker processes (tarfile WebDataset-style reader / "
              "JSONL reader + the HF slow image processor); %s on both sides\n",
              o.records, o.max_side, o.shards, gen.elapsed_s(), build_kind(), o.threads, o.python.c_str(),
              o.threads, o.repeat.text().c_str());
  std::fflush(stdout);
  std::string pattern = "data-{000.." + format("%03d", o.shards - 1) + "}.tar";
  std::vector<std::string> shard_files;
  for (int i = 0; i < o.shards; ++i) shard_files.push_back(format("data-%03d.tar", i));

  // Remote: nginx over the data folder with the per-request delay.
  Server nginx;
  int port = -1;
  const bool remote = o.delay_ms >= 0 && (have_program("nginx") || fs::exists("/usr/sbin/nginx")) &&
                      fs::exists("/usr/lib/nginx/modules/ngx_http_lua_module.so");
  if (remote) {
    port = io::unused_loopback_port();
    STOKER_RETURN_IF_ERROR(write_text_file((dir / "nginx" / "nginx.conf").string(),
                                           nginx_conf(dir / "nginx", data, port, o.delay_ms)));
    const std::string bin = have_program("nginx") ? "nginx" : "/usr/sbin/nginx";
    STOKER_ASSIGN_OR_RETURN(nginx, Server::start({"timeout", "1800", bin, "-p", (dir / "nginx").string(), "-c",
                                                  (dir / "nginx" / "nginx.conf").string(), "-e",
                                                  (dir / "nginx" / "nginx-error.log").string()},
                                                 (dir / "nginx" / "nginx.log").string()));
    STOKER_RETURN_IF_ERROR(nginx.wait_for_port(port, "nginx"));
  } else {
    std::printf("(no remote rows: nginx with its lua module is not installed)\n");
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  struct Spec {
    std::string form, where, stoker;
    std::string peer_form;
    std::vector<std::string> peer;
  };
  std::vector<Spec> specs = {
      {"JSONL + files", "local", (data / "data.jsonl").string(), "jsonl", {(data / "data.jsonl").string()}},
      {"WebDataset shards", "local", (data / "shards" / pattern).string(), "wds", {}},
      {"Energon folder", "local", (data / "energon").string(), "", {}},
  };
  for (const auto& f : shard_files) specs[1].peer.push_back((data / "shards" / f).string());
  if (remote) {
    const std::string where = format("HTTP +%d ms", o.delay_ms);
    specs.push_back({"JSONL + files", where, url + "/data.jsonl", "jsonl", {url + "/data.jsonl"}});
    Spec w{"WebDataset shards", where, url + "/shards/" + pattern, "wds", {}};
    for (const auto& f : shard_files) w.peer.push_back(url + "/shards/" + f);
    specs.push_back(std::move(w));
    specs.push_back({"Energon folder", where, url + "/energon/", "", {}});
  }

  Comparison cmp;
  std::vector<Row> rows;
  std::vector<std::string> reference;  // the first peer pass's digests: every output is compared to it
  for (const Spec& s : specs) {
    Row row{s.form, s.where, {}, {}, !s.peer_form.empty()};
    const fs::path cache = dir / ("cache-" + std::to_string(rows.size()));
    for (int i = 0; i < o.repeat.warmup + o.repeat.passes; ++i) {
      STOKER_ASSIGN_OR_RETURN(Pass p, stoker_pass(s.stoker, cache, o.threads));
      if (i >= o.repeat.warmup) row.stoker.push_back(std::move(p));
    }
    if (row.has_peer) {
      STOKER_ASSIGN_OR_RETURN(row.peer, peer_passes(o, s.peer_form, s.peer, o.repeat.passes));
    }
    for (const Pass& p : row.peer) {
      if (reference.empty()) reference = p.digests;
      cmp.compared(static_cast<std::int64_t>(p.digests.size()));
      cmp.expect_equal(p.digests, reference, "peer " + s.form + " (" + s.where + "): image outputs differ");
    }
    for (const Pass& p : row.stoker) {
      if (reference.empty()) reference = p.digests;
      cmp.compared(static_cast<std::int64_t>(p.digests.size()));
      cmp.expect_equal(p.digests, reference, "stoker " + s.form + " (" + s.where + "): image outputs differ");
    }
    const double sps = row.stoker.empty() ? 0 : row.stoker[0].samples / best_wall(row.stoker);
    std::printf("  %-18s %-12s stoker %7.1f samples/s, first batch %6.3f s, %6.2f CPU ms/sample",
                s.form.c_str(), s.where.c_str(), sps, best_first(row.stoker),
                1e3 * best_cpu(row.stoker) / std::max<std::int64_t>(1, row.stoker[0].samples));
    if (row.has_peer) {
      const double psps = row.peer[0].samples / best_wall(row.peer);
      std::printf(" | peer %7.1f samples/s, first batch %6.3f s, %6.2f CPU ms/sample | stoker/peer %.2f",
                  psps, best_first(row.peer), 1e3 * best_cpu(row.peer) / std::max<std::int64_t>(1, row.peer[0].samples),
                  sps / psps);
    }
    std::printf("\n");
    std::fflush(stdout);
    rows.push_back(std::move(row));
  }
  // ratio: stoker's local shards ÷ the peer's local shards, samples/s.
  const Row& w = rows[1];
  const double ratio = (w.stoker[0].samples / best_wall(w.stoker)) / (w.peer[0].samples / best_wall(w.peer));
  return finish(cmp, "images", "the tarfile WebDataset reader + HF slow processor (local shards, samples/s)", ratio);
}

}  // namespace stoker::bench
