#include "stoker/cluster/worker.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "stoker/base/clock.h"
#include "stoker/cluster/comm.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

namespace {

using Buffer = std::shared_ptr<BufferPool::Buffer>;

// Every medium's payload in the wire's form (its rows, or its resized pixels); a medium that
// fails to decode fails the sample exactly as it would in the receiver's emit (decode_failure,
// stage "decode", the medium named). Empty on the encoded wire (the bytes ride in the result).
std::vector<Buffer> make_payloads(const pipeline::Context& ctx, pipeline::Prepared& p, Wire wire,
                                  image::PixelDType dtype, BufferPool& pool) {
  std::vector<Buffer> out;
  if (p.failure || wire == Wire::kEncoded) return out;
  std::vector<std::size_t> index(pipeline::modalities().size(), 0);
  for (const auto& m : p.media) {
    Buffer buf = pool.get(payload_bytes(*m, wire, ctx.media, dtype));
    Status st = wire == Wire::kFloat
                    ? m->produce(ctx.media, pipeline::rows_dtype(m->modality(), dtype), buf->data.get(), {})
                                     : m->resize(ctx.media, buf->data.get());
    const std::size_t rank = static_cast<std::size_t>(pipeline::modality_rank(m->modality()));
    if (!st.ok()) {
      p.failure = pipeline::decode_failure(ctx, p.item, m->modality(), index[rank], st.error());
      pool.put(std::move(buf));
      for (Buffer& b : out) pool.put(std::move(b));
      out.clear();
      return out;
    }
    ++index[rank];
    out.push_back(std::move(buf));
  }
  return out;
}

}  // namespace

Answer make_answer(const pipeline::Context& ctx, pipeline::Prepared&& p, std::uint64_t ticket,
                   Wire wire, image::PixelDType dtype, BufferPool& pool) {
  Answer a;
  a.payloads = make_payloads(ctx, p, wire, dtype, pool);
  SampleResult r{.ticket = ticket, .prepared = std::move(p), .payloads = {}};
  for (const Buffer& b : a.payloads) r.payloads.push_back(b->size);
  a.failed = r.prepared.failure.has_value();
  a.header = encode(r, wire == Wire::kEncoded && !a.failed);
  return a;
}

Result<WorkerStats> run_worker(const pipeline::LoaderConfig& config, Wire wire, int receivers) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::Context> ctx, pipeline::make_context(config));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<exec::ThreadPool> cpu,
                          exec::ThreadPool::create({.num_threads = config.threads,
                                                    .name = "stoker-cpu",
                                                    .sched = config.worker_sched}));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<exec::ThreadPool> io,
                          exec::ThreadPool::create({.num_threads = config.io_threads,
                                                    .name = "stoker-io",
                                                    .sched = config.worker_sched}));
  const image::PixelDType dtype = config.rows_dtype();  // kUInt8: the device finishes
  std::mutex mu;
  std::condition_variable cv;
  int stops = 0;
  std::uint64_t in_flight = 0;
  std::atomic<std::uint64_t> samples{0}, failed{0};
  std::atomic<std::int64_t> busy_ns{0};
  std::atomic<Comm*> comm_ptr{nullptr};
  BufferPool pool;

  auto finish = [&](int receiver, std::uint64_t ticket, pipeline::Prepared&& p) {
    const std::int64_t t0 = now_ns();
    Answer a = make_answer(*ctx, std::move(p), ticket, wire, dtype, pool);
    std::vector<Buffer> payloads = std::move(a.payloads);
    std::vector<std::uint8_t> header = std::move(a.header);
    busy_ns.fetch_add(now_ns() - t0);
    ++samples;
    if (a.failed) ++failed;
    // The header first: the receiver learns of the payloads before it posts their receives;
    // then one message per medium, in media order (same tag: MPI keeps their order).
    comm_ptr.load()->send(receiver, kTagResult, std::move(header));
    auto left = std::make_shared<std::atomic<std::size_t>>(payloads.size());
    auto done = [&] {
      std::lock_guard lock(mu);
      --in_flight;
      cv.notify_all();
    };
    if (payloads.empty()) {
      done();
      return;
    }
    for (Buffer& payload : payloads) {
      comm_ptr.load()->send(receiver, payload_tag(ticket), payload->data.get(), payload->size,
                            payload, [&pool, payload, left, done] {
        pool.put(payload);
        if (left->fetch_sub(1) == 1) done();
      });
    }
  };

  Comm comm({kTagRequest, kTagStop}, [&](int source, int tag, std::vector<std::uint8_t>&& bytes) {
    if (tag == kTagStop) {
      std::lock_guard lock(mu);
      ++stops;
      cv.notify_all();
      return;
    }
    Result<Request> req = decode_request(bytes);
    if (!req.ok()) {
      std::fprintf(stderr, "stoker cluster: from rank %d: %s\n", source,
                   req.error().to_string().c_str());
      MPI_Abort(MPI_COMM_WORLD, 70);
    }
    pipeline::Item item;
    item.seq = req->seq;
    item.epoch = req->epoch;
    item.k = req->k;
    item.sample = req->sample;
    {
      std::lock_guard lock(mu);
      ++in_flight;
    }
    const std::uint64_t ticket = req->ticket;
    (void)io->submit([&, item, ticket, source](std::stop_token stop) {
      auto fetched = std::make_shared<pipeline::Fetched>(pipeline::read_and_fetch(*ctx, item, stop));
      (void)cpu->submit([&, fetched, ticket, source] {
        const std::int64_t t0 = now_ns();
        pipeline::Prepared p = pipeline::prepare(*ctx, std::move(*fetched));
        busy_ns.fetch_add(now_ns() - t0);
        finish(source, ticket, std::move(p));
      });
    });
  });
  comm_ptr = &comm;
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stops >= receivers && in_flight == 0; });
  }
  io->shutdown(exec::ShutdownMode::kDrain);
  cpu->shutdown(exec::ShutdownMode::kDrain);
  comm.stop();
  WorkerStats s;
  s.samples = samples.load();
  s.failed = failed.load();
  s.bytes_sent = comm.bytes_sent();
  s.bytes_received = comm.bytes_received();
  s.busy_s = busy_ns.load() * 1e-9;
  s.progress_cpu_s = comm.progress_cpu_s();
  return s;
}

}  // namespace stoker::cluster
