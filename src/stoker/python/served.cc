// Served mode: one stoker process per node (stoker.serve) runs the Loader and hands batches to
// every local rank's process (stoker.Loader(connect=...)) through shm::BatchServer/BatchClient:
// the client maps the server's arena (copy-on-write: writes stay local) and wraps each batch zero-copy, exactly like the
// in-process path (same SharedBatch → DLPack capsules). Dropping the last tensor of a batch sends
// its release. The client's first message is an attach (rank, world size, optional resume
// state): `stoker serve` (cli/serve_cmd.cc) answers with that rank's own shard and arena;
// stoker.serve (an unranked server: one shared stream) ignores it. GIL released in connect, next
// and the whole serve loop.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "stoker/dataset/order.h"
#include "stoker/python/bindings.h"
#include "stoker/shm/client.h"
#include "stoker/shm/server.h"
#include "stoker/shm/socket_path.h"

namespace stoker::python {
namespace {

std::string socket_or_default(const std::string& path) {
  return path.empty() ? unwrap(shm::default_socket_path("stoker")) : path;
}

class RawClient {
 public:
  // rank/world_size: -1 = from the launcher's variables (torchrun, Open MPI, Slurm; else 0 of 1).
  // Sent as the attach: a ranked server (`stoker serve`) serves this rank's shard, resumed from
  // `state` when given (epoch, position, errors); an unranked one (stoker.serve) ignores it.
  RawClient(const std::string& socket_path, std::int64_t connect_timeout_ms, int rank,
            int world_size, const py::object& state) {
    dataset::RankFlags flags;
    if (rank >= 0) flags.rank = rank;
    if (world_size >= 0) flags.world_size = world_size;
    dataset::RankInfo ri = unwrap(dataset::resolve_rank_info(flags));
    shm::ClientAttach attach{.rank = ri.rank, .world_size = ri.world_size};
    if (!state.is_none()) {
      py::dict d = state.cast<py::dict>();
      attach.has_state = true;
      attach.epoch = d.contains("epoch") ? d["epoch"].cast<std::uint64_t>() : 0;
      attach.position = d.contains("position") ? d["position"].cast<std::uint64_t>() : 0;
      attach.errors = d.contains("errors") ? d["errors"].cast<std::uint64_t>() : 0;
      attach.packs = d.contains("packs") ? d["packs"].cast<std::uint64_t>() : 0;
      attach.plan = d.contains("plan") ? d["plan"].cast<std::uint32_t>() : 0;
    }
    rank_ = ri.rank;
    world_ = ri.world_size;
    shm::ClientOptions o{.socket_path = socket_or_default(socket_path),
                         .connect_timeout_ms = connect_timeout_ms,
                         .attach = attach};
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

// Runs a Loader and serves its batches until the data ends (then waits for every batch to be
// released), all with the GIL released. Returns the loader's and the server's counters.
py::dict serve(const py::dict& kw, const std::string& socket_path, int clients, int window,
               std::int64_t idle_timeout_ms, double wait_clients_s, double finish_timeout_s) {
  pipeline::LoaderConfig c = loader_config(kw);
  c.arena.shared = true;  // clients map the memfd
  const std::string path = socket_or_default(socket_path);
  pipeline::LoaderStats ls;
  shm::ServerStats ss;
  std::optional<Error> failed;
  {
    py::gil_scoped_release nogil;
    std::unique_ptr<pipeline::Loader> loader = unwrap(pipeline::Loader::create(c));
    std::unique_ptr<shm::BatchServer> server = unwrap(shm::BatchServer::create(
        loader->arena(),
        {.socket_path = path, .window = window, .idle_timeout_ms = idle_timeout_ms}));
    if (clients > 0) {
      check(server->wait_for_clients(
          clients, std::chrono::milliseconds(static_cast<std::int64_t>(wait_clients_s * 1e3))));
    }
    for (;;) {
      Result<std::optional<pipeline::Batch>> b = loader->next();
      if (!b.ok()) {
        failed = std::move(b).error();
        server->fail_clients(*failed);  // the clients see the error, not a clean end
        break;
      }
      if (!*b) break;
      if (Status st = server->send(std::move(**b)); !st.ok()) {
        failed = std::move(st).error();
        break;
      }
    }
    Status fin = server->finish(
        std::chrono::milliseconds(static_cast<std::int64_t>(finish_timeout_s * 1e3)));
    if (!failed && !fin.ok()) failed = std::move(fin).error();
    ls = loader->stats();
    ss = server->stats();
    server.reset();  // closes clients and unlinks the socket before the arena goes
  }
  if (failed) raise(std::move(*failed));
  py::dict d;
  d["socket"] = path;
  d["batches"] = ls.batches;
  d["samples"] = ls.samples;
  d["failed"] = ls.failed;
  d["wait_ratio"] = ls.wait_ratio();
  d["clients_accepted"] = ss.clients_accepted;
  d["clients_lost"] = ss.clients_lost;
  d["batches_sent"] = ss.batches_sent;
  d["batches_released"] = ss.batches_released;
  d["batches_reclaimed"] = ss.batches_reclaimed;
  d["descriptor_bytes"] = ss.descriptor_bytes;
  return d;
}

}  // namespace

void bind_served(py::module_& m) {
  py::class_<RawClient>(m, "RawClient")
      .def(py::init<const std::string&, std::int64_t, int, int, const py::object&>(),
           py::arg("socket"), py::arg("connect_timeout_ms"), py::arg("rank") = -1,
           py::arg("world_size") = -1, py::arg("state") = py::none())
      .def("next", &RawClient::next)
      .def("info", &RawClient::info)
      .def("close", &RawClient::close);
  m.def("serve", &serve, py::arg("options"), py::arg("socket"), py::arg("clients"),
        py::arg("window"), py::arg("idle_timeout_ms"), py::arg("wait_clients_s"),
        py::arg("finish_timeout_s"));
  m.def("default_socket_path", [] { return unwrap(shm::default_socket_path("stoker")); });
}

}  // namespace stoker::python
