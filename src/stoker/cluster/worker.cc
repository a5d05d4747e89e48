#include "stoker/cluster/worker.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "stoker/base/clock.h"
#include "stoker/cluster/comm.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/image/resample.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

namespace {

using Buffer = std::shared_ptr<BufferPool::Buffer>;

// The sample's pixels in the wire's form; a failure to decode fails the sample exactly as it
// would in the receiver's emit (decode_failure, stage "decode", the first broken image).
Buffer make_payload(const pipeline::Context& ctx, pipeline::Prepared& p, Wire wire,
                    image::PixelDType dtype, BufferPool& pool) {
  thread_local image::ImageScratch scratch;
  const image::ImageProcessor& proc = *ctx.processor;
  Buffer buf = pool.get(payload_bytes(p, wire, proc.columns(), dtype));
  std::uint8_t* out = buf->data.get();
  std::size_t at = 0;
  for (std::size_t i = 0; i < p.plans.size(); ++i) {
    const image::ImagePlan& plan = p.plans[i];
    Status st;
    if (wire == Wire::kFloat) {
      st = proc.process(p.encoded[i], plan, dtype, out + at, &scratch);
      at += static_cast<std::size_t>(plan.rows()) * proc.columns() *
            (dtype == image::PixelDType::kFloat32 ? 4 : 2);
    } else {
      st = proc.decode(p.encoded[i], plan, &scratch.decoded, &scratch.stored);
      if (st.ok()) {
        image::resize_bicubic_exact(scratch.decoded, plan.width, plan.height, &scratch.resized);
        const std::size_t n = static_cast<std::size_t>(plan.width) * plan.height * 3;
        std::copy(scratch.resized.pixels.begin(), scratch.resized.pixels.begin() + n, out + at);
        at += n;
      }
    }
    if (!st.ok()) {
      p.failure = pipeline::decode_failure(ctx, p.item, i, st.error());
      pool.put(std::move(buf));
      return nullptr;
    }
  }
  return buf;
}

}  // namespace

Answer make_answer(const pipeline::Context& ctx, pipeline::Prepared&& p, std::uint64_t ticket,
                   Wire wire, image::PixelDType dtype, BufferPool& pool) {
  Buffer payload;
  if (!p.failure && wire != Wire::kEncoded) payload = make_payload(ctx, p, wire, dtype, pool);
  if (payload && payload->size == 0) {  // a sample without images
    pool.put(std::move(payload));
    payload = nullptr;
  }
  if (wire != Wire::kEncoded || p.failure) p.encoded.clear();
  Answer a;
  a.result = SampleResult{.ticket = ticket, .prepared = std::move(p),
                          .payload_bytes = payload ? payload->size : 0};
  a.payload = std::move(payload);
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
  const image::PixelDType dtype = config.pixel_dtype;
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
    Buffer payload = std::move(a.payload);
    const bool bad = a.result.prepared.failure.has_value();
    std::vector<std::uint8_t> header = encode(a.result);
    busy_ns.fetch_add(now_ns() - t0);
    ++samples;
    if (bad) ++failed;
    // The header first: the receiver learns of the payload before it posts its receive.
    comm_ptr.load()->send(receiver, kTagResult, std::move(header));
    auto done = [&] {
      std::lock_guard lock(mu);
      --in_flight;
      cv.notify_all();
    };
    if (payload) {
      comm_ptr.load()->send(receiver, payload_tag(ticket), payload->data.get(), payload->size,
                            payload, [&pool, payload, done] {
        pool.put(payload);
        done();
      });
    } else {
      done();
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
