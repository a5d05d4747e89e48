#include "stoker/cluster/receiver.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "stoker/base/clock.h"
#include "stoker/cluster/worker.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

// The local lane: a worker's context and pools in this process (worker.h make_answer).
struct Receiver::Local {
  std::unique_ptr<pipeline::Context> ctx;
  std::unique_ptr<exec::ThreadPool> io, cpu;
  image::PixelDType dtype = image::PixelDType::kFloat32;
  BufferPool pool;
  std::atomic<std::int64_t> busy_ns{0};
  ~Local() {
    if (io) io->shutdown(exec::ShutdownMode::kDrain);
    if (cpu) cpu->shutdown(exec::ShutdownMode::kDrain);
  }
};

Result<std::shared_ptr<Receiver>> Receiver::create(std::vector<int> workers, Wire wire,
                                                   const image::ImageProcessor* processor,
                                                   std::optional<LocalLane> local) {
  auto r = std::make_shared<Receiver>(std::move(workers), wire, processor);
  if (local && local->threads > 0) {
    auto l = std::make_unique<Local>();
    STOKER_ASSIGN_OR_RETURN(l->ctx, pipeline::make_context(local->config));
    // The Loader's scheduling class, as its own pools have when there are no workers (batch by
    // default: a waking receive preempts them, they never preempt it). Not SCHED_IDLE: on a
    // host whose CPU other processes keep busy an idle-class thread gets none, and the request
    // it holds stalls in-order delivery (measured: a 2-worker job 38% slower).
    STOKER_ASSIGN_OR_RETURN(l->io, exec::ThreadPool::create({.num_threads = local->config.io_threads,
                                                             .name = "stoker-lio",
                                                             .sched = local->config.worker_sched}));
    STOKER_ASSIGN_OR_RETURN(l->cpu, exec::ThreadPool::create({.num_threads = local->threads,
                                                              .name = "stoker-lcpu",
                                                              .sched = local->config.worker_sched}));
    l->dtype = local->config.pixel_dtype;
    std::lock_guard lock(r->mu_);
    r->local_ = std::move(l);
    r->local_threads_ = local->threads;
    r->lanes_[kLocal] = Lane{};
  }
  return r;
}

Receiver::Receiver(std::vector<int> workers, Wire wire, const image::ImageProcessor* processor)
    : workers_(std::move(workers)), wire_(wire), processor_(processor) {
  for (int w : workers_) lanes_[w] = Lane{};
  comm_ = std::make_unique<Comm>(std::vector<int>{kTagResult},
                                 [this](int source, int, std::vector<std::uint8_t>&& bytes) {
                                   on_result(source, std::move(bytes));
                                 });
}

Receiver::~Receiver() {
  if (local_) {  // its tasks finish (and call on_local) while local_ is still there
    local_->io->shutdown(exec::ShutdownMode::kDrain);
    local_->cpu->shutdown(exec::ShutdownMode::kDrain);
  }
  comm_->stop();
  local_.reset();
}

// The lane expected to answer a new request first: (unanswered + 1) × its interval between
// answers. Lanes not measured yet count at the mean of the measured ones (all unmeasured: the
// fewest unanswered, ties in turn, as before any measurement). The local lane takes at most one
// request per thread plus one: a request it holds waits for its CPU, and delivery is in order.
int Receiver::pick_lane() {
  double known = 0;
  int n_known = 0;
  for (const auto& [rank, lane] : lanes_) {
    if (lane.interval_s > 0) known += lane.interval_s, ++n_known;
  }
  const double fallback = n_known > 0 ? known / n_known : 1;
  int best = 0;
  double best_cost = 0;
  bool have = false;
  const std::size_t n = workers_.size();
  for (std::size_t i = 0; i <= n; ++i) {
    int rank = 0;
    if (i < n) {
      rank = workers_[(next_worker_ + i) % n];
    } else {
      if (local_threads_ == 0 || lanes_[kLocal].unanswered > local_threads_) continue;
      rank = kLocal;
    }
    const Lane& lane = lanes_[rank];
    const double cost = (lane.unanswered + 1) * (lane.interval_s > 0 ? lane.interval_s : fallback);
    if (!have || cost < best_cost) best = rank, best_cost = cost, have = true;
  }
  if (best != kLocal) {
    for (std::size_t i = 0; i < n; ++i) {
      if (workers_[i] == best) next_worker_ = i + 1;
    }
  }
  Lane& lane = lanes_[best];
  if (lane.unanswered++ == 0) lane.since_ns = now_ns();
  return best;
}

void Receiver::answered(int rank) {
  Lane& lane = lanes_[rank];
  --lane.unanswered;
  const std::int64_t now = now_ns();
  const double interval = (now - lane.since_ns) * 1e-9;
  lane.interval_s = lane.interval_s > 0 ? 0.8 * lane.interval_s + 0.2 * interval : interval;
  lane.since_ns = now;
}

void Receiver::submit(const void* owner, const pipeline::Item& item,
                      std::function<void(pipeline::Prepared&&)> done) {
  Request req{.seq = item.seq, .epoch = item.epoch, .k = item.k, .sample = item.sample};
  int worker = 0;
  {
    std::lock_guard lock(mu_);
    req.ticket = next_ticket_++;
    worker = workers_.empty() && local_threads_ > 0 ? (++lanes_[kLocal].unanswered, kLocal)
                                                     : pick_lane();
    pending_[req.ticket] = Pending{.owner = owner, .item = item, .done = std::move(done), .worker = worker};
  }
  if (worker == kLocal) {
    run_local(req.ticket, item);
  } else {
    comm_->send(worker, kTagRequest, encode(req));
  }
}

// A worker's work on this process's lane; the result goes through the wire's encoding and back,
// so the engine sees exactly what a worker's answer would give it.
void Receiver::run_local(std::uint64_t ticket, const pipeline::Item& item) {
  Local* l = local_.get();
  pipeline::Item request;  // what a request carries, nothing more
  request.seq = item.seq;
  request.epoch = item.epoch;
  request.k = item.k;
  request.sample = item.sample;
  (void)l->io->submit([this, l, ticket, request](std::stop_token stop) {
    auto fetched = std::make_shared<pipeline::Fetched>(pipeline::read_and_fetch(*l->ctx, request, stop));
    (void)l->cpu->submit([this, l, ticket, fetched] {
      const std::int64_t t0 = now_ns();
      pipeline::Prepared p = pipeline::prepare(*l->ctx, std::move(*fetched));
      Answer a = make_answer(*l->ctx, std::move(p), ticket, wire_, l->dtype, l->pool);
      std::vector<std::uint8_t> header = encode(a.result);
      l->busy_ns.fetch_add(now_ns() - t0);
      on_local(ticket, std::move(header), std::move(a.payload));
    });
  });
}

void Receiver::on_local(std::uint64_t ticket, std::vector<std::uint8_t>&& header,
                        std::shared_ptr<BufferPool::Buffer> payload) {
  const std::size_t size = header.size();
  Result<SampleResult> r = decode_result(header);
  STOKER_CHECK(r.ok() && r->ticket == ticket, "cluster: a local answer that does not decode");
  std::function<void(pipeline::Prepared&&)> done;
  pipeline::Prepared p = std::move(r->prepared);
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(ticket);
    STOKER_CHECK(it != pending_.end() && it->second.worker == kLocal, "cluster: unknown local ticket");
    answered(kLocal);
    ++stats_.local_samples;
    stats_.local_bytes += size + r->payload_bytes;
    Pending& pend = it->second;
    pend.answered = true;
    pend.payload = r->payload_bytes;
    if (pend.abandoned) {
      if (payload) local_->pool.put(std::move(payload));
      pending_.erase(it);
      finished_one();
      return;
    }
    p.item = pend.item;
    done = std::move(pend.done);
    if (r->payload_bytes > 0) {
      pend.local_payload = std::move(payload);
      p.remote = pipeline::RemotePixels{.ticket = ticket, .bytes = r->payload_bytes};
    } else {
      pending_.erase(it);
      finished_one();
    }
  }
  done(std::move(p));
}

void Receiver::finished_one() {
  if (pending_.empty()) cv_.notify_all();
}

void Receiver::discard_payload(int worker, std::uint64_t ticket, std::uint64_t bytes) {
  auto scratch = staging_.get(bytes);
  comm_->recv(worker, payload_tag(ticket), scratch->data.get(), bytes, [this, scratch, bytes] {
    staging_.put(scratch);
    std::lock_guard lock(mu_);
    stats_.payload_bytes += bytes;
    stats_.message_bytes += bytes;
  });
}

void Receiver::on_result(int source, std::vector<std::uint8_t>&& bytes) {
  const std::size_t size = bytes.size();
  Result<SampleResult> r = decode_result(bytes);
  if (!r.ok()) {
    std::fprintf(stderr, "stoker cluster: from rank %d: %s\n", source, r.error().to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 70);
  }
  std::function<void(pipeline::Prepared&&)> done;
  pipeline::Prepared p = std::move(r->prepared);
  {
    std::lock_guard lock(mu_);
    stats_.message_bytes += size;
    auto it = pending_.find(r->ticket);
    if (it == pending_.end() || it->second.worker != source || it->second.answered) {
      std::fprintf(stderr, "stoker cluster: rank %d answered ticket %llu that this receiver did "
                   "not give it\n", source, static_cast<unsigned long long>(r->ticket));
      MPI_Abort(MPI_COMM_WORLD, 70);
    }
    answered(source);
    ++stats_.samples;
    Pending& pend = it->second;
    pend.answered = true;
    pend.payload = r->payload_bytes;
    if (pend.abandoned) {
      if (r->payload_bytes > 0) discard_payload(source, r->ticket, r->payload_bytes);
      pending_.erase(it);
      finished_one();
      return;
    }
    p.item = pend.item;  // the engine's item (unit, state after it, plan)
    done = std::move(pend.done);
    if (r->payload_bytes > 0) {
      p.remote = pipeline::RemotePixels{.ticket = r->ticket, .bytes = r->payload_bytes};
    } else {
      pending_.erase(it);
      finished_one();
    }
  }
  done(std::move(p));
}

void Receiver::pixels(std::span<const pipeline::Prepared* const> samples,
                      std::span<std::uint8_t* const> dst, image::PixelDType dtype,
                      exec::ThreadPool* helpers, std::vector<std::optional<Error>>* errors) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t left = 0;
  };
  auto wait = std::make_shared<Wait>();
  wait->left = samples.size();  // one receive per sample, set before any can complete
  std::vector<std::shared_ptr<BufferPool::Buffer>> staging(samples.size());
  std::vector<std::size_t> local_staged;  // staging[i] that belong to the local lane's pool
  // Float rows made here: copied into the block after the lock (dst null: a wrong size).
  std::vector<std::pair<std::uint8_t*, std::shared_ptr<BufferPool::Buffer>>> local_copies;
  const std::int64_t cols = processor_->columns();
  const std::uint64_t elem = dtype == image::PixelDType::kFloat32 ? 4 : 2;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const pipeline::Prepared& p = *samples[i];
      auto it = pending_.find(p.remote->ticket);
      STOKER_CHECK(it != pending_.end() && it->second.answered, "cluster: pixels of an unknown sample");
      const int worker = it->second.worker;
      const std::uint64_t bytes = it->second.payload;
      std::shared_ptr<BufferPool::Buffer> local = std::move(it->second.local_payload);
      pending_.erase(it);
      std::uint8_t* into = dst[i];
      const std::uint64_t want = wire_ == Wire::kFloat
                                     ? static_cast<std::uint64_t>(p.pixel_rows) * cols * elem
                                     : payload_bytes(p, Wire::kUint8, cols, dtype);
      if (bytes != want) {
        (*errors)[i] = data_loss("cluster: pixel payload of " + std::to_string(bytes) +
                                 " bytes, expected " + std::to_string(want) + " (" +
                                 wire_name(wire_) + " wire)");
      }
      if (worker == kLocal) {  // made here: copied into the rows, or staged for normalising
        if (wire_ == Wire::kFloat) {
          local_copies.push_back({bytes == want ? into : nullptr, std::move(local)});
        } else {
          staging[i] = std::move(local);
          local_staged.push_back(i);
        }
        std::lock_guard l(wait->mu);
        --wait->left;
        continue;
      }
      if (wire_ != Wire::kFloat || bytes != want) {
        staging[i] = staging_.get(bytes);
        into = staging[i]->data.get();
      }
      comm_->recv(worker, payload_tag(p.remote->ticket), into, bytes, [this, wait, bytes] {
        {
          std::lock_guard l(mu_);
          stats_.payload_bytes += bytes;
          stats_.message_bytes += bytes;
        }
        std::lock_guard l(wait->mu);
        if (--wait->left == 0) wait->cv.notify_all();
      });
    }
    finished_one();
  }
  for (auto& [into, buf] : local_copies) {
    if (into != nullptr) std::memcpy(into, buf->data.get(), buf->size);
    local_->pool.put(std::move(buf));
  }
  {
    // Not stoppable: MPI writes into the block until the receive completes.
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->left == 0; });
  }
  // Staged buffers go back to the pool they came from.
  auto give_back = [&] {
    for (std::size_t i : local_staged) local_->pool.put(std::move(staging[i]));
    for (auto& b : staging)
      if (b) staging_.put(std::move(b));
  };
  if (wire_ != Wire::kUint8) return give_back();  // float: only a wrong-size payload was staged
  // uint8 wire: normalise + patchify each image into its rows, on the helpers and this thread.
  struct Image {
    const std::uint8_t* rgb;
    const image::ImagePlan* plan;
    std::uint8_t* out;
  };
  auto images = std::make_shared<std::vector<Image>>();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if ((*errors)[i]) continue;
    const std::uint8_t* rgb = staging[i]->data.get();
    std::uint8_t* out = dst[i];
    for (const image::ImagePlan& plan : samples[i]->plans) {
      images->push_back({rgb, &plan, out});
      rgb += static_cast<std::size_t>(plan.width) * plan.height * 3;
      out += static_cast<std::size_t>(plan.rows()) * cols * elem;
    }
  }
  struct Job {
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto job = std::make_shared<Job>();
  const image::ImageProcessor* proc = processor_;
  auto work = [job, images, proc, dtype] {
    for (;;) {
      const std::size_t i = job->next.fetch_add(1);
      if (i >= images->size()) return;
      const Image& img = (*images)[i];
      proc->normalize_patchify(img.rgb, *img.plan, dtype, img.out);
      if (job->done.fetch_add(1) + 1 == images->size()) {
        std::lock_guard lock(job->mu);
        job->cv.notify_all();
      }
    }
  };
  if (images->empty()) return give_back();
  if (helpers != nullptr) {
    const int n = std::min<int>(static_cast<int>(images->size()) - 1, helpers->num_threads());
    for (int h = 0; h < n; ++h) (void)helpers->submit(work);
  }
  work();
  {
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == images->size(); });
  }
  give_back();
}

void Receiver::abandon(const void* owner) {
  std::lock_guard lock(mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (p.owner != owner || p.abandoned) {
      ++it;
      continue;
    }
    p.done = nullptr;
    if (p.answered) {  // delivered to the engine, its payload never claimed
      if (p.worker == kLocal) {
        if (p.local_payload) local_->pool.put(std::move(p.local_payload));
      } else if (p.payload > 0) {
        discard_payload(p.worker, it->first, p.payload);
      }
      it = pending_.erase(it);
    } else {
      p.abandoned = true;
      ++it;
    }
  }
  finished_one();
}

void Receiver::drain() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_.empty(); });
  }
  for (int w : workers_) comm_->send(w, kTagStop, std::vector<std::uint8_t>{});
  comm_->stop();
}

ReceiverStats Receiver::stats() const {
  std::lock_guard lock(mu_);
  ReceiverStats s = stats_;
  if (local_) s.local_busy_s = local_->busy_ns.load() * 1e-9;
  s.progress_cpu_s = comm_->progress_cpu_s();
  return s;
}

}  // namespace stoker::cluster
