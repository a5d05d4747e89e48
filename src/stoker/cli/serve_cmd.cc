// `stoker serve`: the node-local data server (DESIGN.md §4 "One node"): every local rank's own
// shard, zero-copy over shared memory, crash/reattach exactly once, per-rank counters and
// metrics — all of it shm::NodeServer (shm/node_server.h), the library Python's stoker.serve()
// and `stoker cluster --serve` use too. This file parses (the option schema), wires the
// observer (--trace, --metrics-port) and the signals, and prints the server's lines.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "stoker/cli/commands.h"
#include "stoker/cli/observe.h"
#include "stoker/cli/options_cli.h"
#include "stoker/cli/run_loop.h"
#include "stoker/shm/node_server.h"

namespace stoker::cli {

const char kServeHelp[] = R"(usage: stoker serve DATA.jsonl [MORE.jsonl ...] --world-size W [options]

Serves every rank of a W-rank job on this node its own shard over a private Unix socket:
a process attaches with stoker.Loader(connect=PATH) (rank and world size from its arguments or
torchrun's RANK/WORLD_SIZE) and reads its batches zero-copy from shared memory. A rank whose
process dies and is started again continues after the last batch it released. Exits when every
rank finished its epochs, or on SIGINT/SIGTERM. With torchrun (README "One server per node"):
  STOKER_SERVER=PATH torchrun --nproc_per_node W --redirects 2 --tee 2 train.py
(Debian's torch 1.13 under Python 3.11: torchrun crashes without --redirects/--tee 1 or 2.)
Totals: per rank and in the summary, sent = released + reclaimed + held; a connection that never
attaches (another server checking this one is alive) is no client; refused attaches are counted.
)";

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

}  // namespace

Status serve_loader(const config::Settings& settings, const ServeHooks& hooks) {
  shm::NodeServerOptions options = shm::NodeServerOptions::from(settings);
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Observer> observer,
                          Observer::create(settings.observe, "serve"));
  options.base.tracer = observer->tracer();
  if (hooks.configure) STOKER_RETURN_IF_ERROR(hooks.configure(options.base));
  options.log = [](const std::string& line) {
    std::printf("stoker serve: %s\n", line.c_str());
    std::fflush(stdout);
  };
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<shm::NodeServer> server,
                          shm::NodeServer::create(std::move(options)));
  // The endpoint stops in observer->finish(), before the server closes.
  STOKER_RETURN_IF_ERROR(observer->serve_metrics([srv = server.get()] { return srv->metrics_text(); }));
  Status served = server->run([] { return g_stop.load(); });
  Status observed = observer->finish(nullptr, "");  // the trace; stops the endpoint
  server->close();  // per-rank lines and the summary, final; the socket removed
  // The trace is a diagnostic output (issue #28): a warning unless --strict-outputs.
  return shm::serve_result(std::move(served), observed, settings.loader.strict_outputs, "serve");
}

int run_serve(int argc, char** argv) {
  bool help = false;
  Result<config::Settings> settings = parse_command_line(argc, argv, config::kServe, &help);
  if (help) {
    std::fputs(kServeHelp, stdout);
    std::fputs(options_help(config::kServe).c_str(), stdout);
    return 0;
  }
  if (!settings.ok()) return report("serve", settings.error());
  warn_settings(*settings, "serve");
  Status st = serve_loader(*settings, {});
  if (!st.ok()) return report("serve", st.error());
  return 0;
}

}  // namespace stoker::cli
