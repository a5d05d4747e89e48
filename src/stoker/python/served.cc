// Served mode: one stoker process per node (stoker.serve) runs the Loader and hands batches to
// every local rank's process (stoker.Loader(connect=...)) through shm::BatchServer/BatchClient:
// the client maps the server's arena (copy-on-write: writes stay local) and wraps each batch zero-copy, exactly like the
// in-process path (same SharedBatch → DLPack capsules). Dropping the last tensor of a batch sends
// its release. The client's first message is an attach (rank, world size, optional resume
// state): the node server (shm::NodeServer — `stoker serve`, stoker.serve() and cluster --serve
// alike) answers with that rank's own shard and arena. GIL released in connect, next and the
// whole serve loop.
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "stoker/dataset/order.h"
#include "stoker/python/bindings.h"
#include "stoker/shm/client.h"
#include "stoker/obs/metrics_server.h"
#include "stoker/obs/trace.h"
#include "stoker/shm/node_server.h"
#include "stoker/shm/socket_path.h"

namespace stoker::python {
namespace {

std::string socket_or_default(const std::string& path) {
  return path.empty() ? unwrap(shm::default_socket_path("stoker")) : path;
}

class RawClient {
 public:
  // rank/world_size: -1 = from the launcher's variables (torchrun, Open MPI, Slurm; else 0 of 1).
  // Sent as the attach: the node server serves this rank's shard, resumed from `state` when
  // given (a state_dict(): epoch, position, errors, packs/plan, a mixture's mix), else from what
  // this rank last released. server_uid: a uid
  // whose server is trusted besides this user's own (-1: none; the package resolves
  // server_uid= / $STOKER_SERVER_UID through the option schema).
  RawClient(const std::string& socket_path, std::int64_t connect_timeout_ms, int rank,
            int world_size, const py::object& state, std::int64_t server_uid) {
    dataset::RankFlags flags;
    if (rank >= 0) flags.rank = rank;
    if (world_size >= 0) flags.world_size = world_size;
    dataset::RankInfo ri = unwrap(dataset::resolve_rank_info(flags));
    shm::ClientAttach attach{
        .rank = ri.rank, .world_size = ri.world_size, .has_state = false, .state = {}};
    if (!state.is_none()) {
      // Sent as its text (a mixture's mix= cursors included); the server parses it as it
      // parses a state file.
      attach.has_state = true;
      attach.state = state_from_dict(state.cast<py::dict>()).serialize();
    }
    rank_ = ri.rank;
    world_ = ri.world_size;
    shm::ClientOptions o{.socket_path = socket_or_default(socket_path),
                         .connect_timeout_ms = connect_timeout_ms,
                         .attach = attach};
    if (server_uid >= 0) o.server_uid = static_cast<std::uint32_t>(server_uid);
    py::gil_scoped_release nogil;
    client_ = unwrap(shm::BatchClient::connect(o));
  }
  ~RawClient() { close(); }
  void close() { client_.reset(); }  // delivered tensors keep the mapping alive

  py::object next() {
    shm::BatchClient& c = live();
    std::optional<Result<std::optional<shm::RemoteBatch>>> r;
    std::int64_t ready_ns = 0;
    bool interrupted = false;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(next_mu_);
      r.emplace(c.next([&] { return interrupted = python_signal_pending(); }, kSignalPoll));
      ready_ns = monotonic_ns();
    }
    if (interrupted) throw py::error_already_set();  // KeyboardInterrupt: the batch stays queued
    std::optional<shm::RemoteBatch> b = unwrap(std::move(*r));
    if (!b) return py::none();
    auto shared = std::make_shared<SharedBatch>();
    shared->layout = b->layout();
    shared->base = b->data(batch::TensorView{});  // the mapping's base (offset 0)
    shared->keep = std::make_shared<shm::RemoteBatch>(std::move(*b));
    return batch_tuple(shared, ready_ns);
  }

  py::dict info() {
    shm::BatchClient& c = live();
    py::dict d;
    d["base"] = reinterpret_cast<std::uintptr_t>(c.base());
    d["capacity"] = c.arena_bytes();
    d["server_pid"] = c.server_pid();
    d["batches"] = c.stats().batches;
    d["socket_bytes"] = c.stats().socket_bytes;
    d["rank"] = rank_;
    d["world_size"] = world_;
    return d;
  }

 private:
  shm::BatchClient& live() {
    if (!client_) raise(invalid_argument("Loader is closed"));
    return *client_;
  }
  std::mutex next_mu_;
  std::unique_ptr<shm::BatchClient> client_;
  int rank_ = 0, world_ = 1;
};

// The node server (shm::NodeServer, the library `stoker serve` runs): every rank of the job its
// own shard, reattach exactly once, per-rank counters; the same lines as `stoker serve` on stdout
// (quiet=True: no progress lines). Serves until every rank finished its epochs (or Ctrl-C:
// KeyboardInterrupt once the server is closed), all with the GIL released. Returns the counters,
// in total and per rank.
py::dict serve(const py::dict& kw) {
  const config::Settings s = settings_from_keywords(kw, config::kPyServe);
  shm::NodeServerOptions options = shm::NodeServerOptions::from(s);
  std::shared_ptr<obs::Tracer> tracer;
  if (!s.observe.trace_path.empty()) {
    tracer = std::make_shared<obs::Tracer>(s.observe.trace);
    tracer->set_process_name("stoker serve()");
    options.base.tracer = tracer;
  }
  options.log = [](const std::string& line) {
    std::printf("stoker serve: %s\n", line.c_str());
    std::fflush(stdout);
  };
  Status result;
  std::vector<shm::RankReport> ranks;
  shm::ServerStats st;
  std::string socket;
  bool finished = false, interrupted = false;
  {
    py::gil_scoped_release nogil;
    std::unique_ptr<shm::NodeServer> server = unwrap(shm::NodeServer::create(std::move(options)));
    socket = server->socket_path();
    std::unique_ptr<obs::MetricsServer> metrics;
    if (s.observe.metrics_port >= 0) {
      metrics = unwrap(obs::MetricsServer::start(
          {.address = s.observe.metrics_addr, .port = s.observe.metrics_port},
          [srv = server.get()] { return srv->metrics_text(); }));
      std::fprintf(stderr, "stoker serve: metrics at %s\n", metrics->url().c_str());
    }
    result = server->run([&] { return interrupted = python_signal_pending(); });
    metrics.reset();  // before the server closes
    server->close();
    finished = server->finished();
    ranks = server->ranks();
    st = server->stats();
    server.reset();
    if (tracer != nullptr) {
      // A diagnostic output (issue #28): a warning naming the path, unless strict_outputs.
      Status w = tracer->write(s.observe.trace_path);
      if (!w.ok()) w = Error(w.error()).with_context("trace " + s.observe.trace_path);
      result = shm::serve_result(std::move(result), w, s.loader.strict_outputs, "serve()");
    }
  }
  if (interrupted) throw py::error_already_set();  // KeyboardInterrupt (or what a handler raised)
  check(std::move(result));
  py::dict d;
  d["socket"] = socket;
  d["finished"] = finished;
  d["clients_accepted"] = st.clients_accepted;
  d["clients_lost"] = st.clients_lost;
  d["clients_refused"] = st.clients_rejected;
  d["batches_sent"] = st.batches_sent;
  d["batches_released"] = st.batches_released;
  d["batches_reclaimed"] = st.batches_reclaimed;
  d["descriptor_bytes"] = st.descriptor_bytes;
  py::list per_rank;
  for (const shm::RankReport& r : ranks) {
    py::dict rd;
    rd["rank"] = r.rank;
    rd["batches_sent"] = r.batches_sent;
    rd["batches_released"] = r.batches_released;
    rd["batches_reclaimed"] = r.batches_reclaimed;
    rd["attaches"] = r.attaches;
    rd["ended"] = r.ended;
    rd["epoch"] = r.committed.epoch;
    rd["position"] = r.committed.position;
    rd["error"] = r.error;
    per_rank.append(rd);
  }
  d["ranks"] = per_rank;
  return d;
}

}  // namespace

void bind_served(py::module_& m) {
  py::class_<RawClient>(m, "RawClient")
      .def(py::init<const std::string&, std::int64_t, int, int, const py::object&, std::int64_t>(),
           py::arg("socket"), py::arg("connect_timeout_ms"), py::arg("rank") = -1,
           py::arg("world_size") = -1, py::arg("state") = py::none(), py::arg("server_uid") = -1)
      .def("next", &RawClient::next)
      .def("info", &RawClient::info)
      .def("close", &RawClient::close);
  m.def("serve", &serve, py::arg("options"));
  m.def("default_socket_path", [] { return unwrap(shm::default_socket_path("stoker")); });
}

}  // namespace stoker::python
