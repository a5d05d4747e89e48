// `stoker consume --socket PATH`: a simulated GPU trainer in its own process, fed zero-copy by a
// hand-off server (shm::BatchServer; `stoker bench ladder` spawns it for its zero-copy mode).
// Per step: time blocked in next() (the wait), then sleep --step-ms (a GPU-bound step leaves the
// CPU free), then drop the batch (its release lets the producer reuse the block). Writes one CSV
// row per step and '#'-prefixed summary lines (hand-off p50, socket bytes, peak RSS).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/config/build.h"
#include "stoker/shm/client.h"

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: stoker consume --socket PATH [options]

Connects to a stoker hand-off server (zero-copy: batches are read in place in the server's
shared arena), and runs a simulated trainer until the server ends the stream.

options:
  --socket PATH            the server's Unix socket
  --step-ms MS             simulated GPU time per step (default 0)
  --csv FILE               per-step rows: step,wait_ms,step_ms,samples,arrive_ns (default: stdout)
  --connect-timeout-ms MS  wait this long for the server to come up (default 10000)

The server must run as this user, or as the uid in $STOKER_SERVER_UID (otherwise refused).
)";

// Reads one byte of every tensor: proof the view is readable, without costing CPU time that a
// GPU-bound trainer would not spend (the real host→GPU copy is DMA).
std::uint64_t touch(const shm::RemoteBatch& b) {
  std::uint64_t sum = 0;
  for (const batch::TensorView& t : b.layout().tensors)
    if (t.bytes() > 0) sum += *b.data(t);
  return sum;
}

Status run(const Args& args) {
  if (!args.has("socket")) return invalid_argument("--socket PATH is required");
  // A sleep per step: at most a day, so step_ms·1e6 ns stays far from int64 overflow.
  STOKER_ASSIGN_OR_RETURN(double step_ms, args.get_double("step-ms", 0, 0, 86'400'000));
  STOKER_ASSIGN_OR_RETURN(std::int64_t timeout_ms,
                          args.get_int<std::int64_t>("connect-timeout-ms", 10000, 0,
                                                     std::numeric_limits<int>::max()));
  std::FILE* out = stdout;
  if (args.has("csv")) {
    out = std::fopen(args.get("csv").c_str(), "w");
    if (out == nullptr) return permission_denied("cannot write " + args.get("csv"));
  }
  shm::ClientOptions options{.socket_path = args.get("socket"), .connect_timeout_ms = timeout_ms};
  // A server of another uid only when named: the option schema's server_uid, whose fallback
  // $STOKER_SERVER_UID is read (and checked) here as Python's Loader reads it.
  STOKER_ASSIGN_OR_RETURN(std::optional<config::Value> uid,
                          config::env_value(*config::find_option("server_uid", config::kPyLoader)));
  if (uid) options.server_uid = static_cast<std::uint32_t>(uid->i);
  STOKER_ASSIGN_OR_RETURN(auto client, shm::BatchClient::connect(options));
  std::fprintf(out, "step,wait_ms,step_ms,samples,arrive_ns\n");
  std::vector<std::int64_t> handoff;
  std::int64_t max_wire = 0;
  std::uint64_t checksum = 0;
  const auto step = std::chrono::nanoseconds(static_cast<std::int64_t>(step_ms * 1e6));
  for (int i = 0;; ++i) {
    const std::int64_t t0 = now_ns();
    auto b = client->next();
    const std::int64_t t1 = now_ns();
    if (!b.ok()) return std::move(b).error().with_context("step " + std::to_string(i));
    if (!b->has_value()) break;
    shm::RemoteBatch batch = std::move(**b);
    // Hand-off latency counts only where the trainer was already waiting when the descriptor
    // left; otherwise it sat queued while the trainer was busy (that is prefetch, not cost).
    if (t1 - batch.handoff_ns() >= t0) handoff.push_back(batch.handoff_ns());
    max_wire = std::max(max_wire, batch.wire_bytes());
    checksum += touch(batch);
    std::this_thread::sleep_for(step);
    batch.release();
    const batch::TensorView* ids = batch.layout().find("input_ids");
    const std::int64_t samples = ids != nullptr && !ids->shape.empty() ? ids->shape[0] : 0;
    std::fprintf(out, "%d,%.4f,%.4f,%lld,%lld\n", i, (t1 - t0) / 1e6, (now_ns() - t0) / 1e6,
                 static_cast<long long>(samples), static_cast<long long>(t1));
  }
  std::sort(handoff.begin(), handoff.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  shm::ClientStats st = client->stats();
  std::fprintf(out, "# batches=%lld socket_bytes=%lld max_descriptor_bytes=%lld\n",
               static_cast<long long>(st.batches), static_cast<long long>(st.socket_bytes),
               static_cast<long long>(max_wire));
  std::fprintf(out, "# handoff_p50_us=%.1f handoff_n=%zu peak_rss_kb=%ld checksum=%llu\n",
               handoff.empty() ? -1.0 : handoff[handoff.size() / 2] / 1e3, handoff.size(),
               ru.ru_maxrss, static_cast<unsigned long long>(checksum));
  if (out != stdout) std::fclose(out);
  return ok_status();
}

}  // namespace

int run_consume(int argc, char** argv) {
  auto args = Args::parse(argc, argv, {"socket", "step-ms", "csv", "connect-timeout-ms"}, {"help"});
  if (!args.ok()) return report("consume", args.error());
  if (args->has("help")) {
    std::printf("%s", kHelp);
    return 0;
  }
  Status s = run(*args);
  return s.ok() ? 0 : report("consume", s.error());
}

}  // namespace stoker::cli
