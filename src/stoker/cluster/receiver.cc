#include "stoker/cluster/receiver.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "stoker/base/clock.h"
#include "stoker/base/printable.h"
#include "stoker/cluster/worker.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

// The local lane: a worker's context and pools in this process (worker.h make_answer).
struct Receiver::Local {
  std::unique_ptr<pipeline::Context> ctx;
  std::unique_ptr<exec::ThreadPool> io, cpu;
  image::PixelDType dtype = image::PixelDType::kFloat32;
  std::atomic<std::int64_t> busy_ns{0};
  ~Local() {
    if (io) io->shutdown(exec::ShutdownMode::kDrain);
    if (cpu) cpu->shutdown(exec::ShutdownMode::kDrain);
  }
};

Result<std::shared_ptr<Receiver>> Receiver::create(std::vector<int> workers, Wire wire,
                                                   std::optional<LocalLane> local) {
  auto r = std::make_shared<Receiver>(std::move(workers), wire);
  if (local && local->threads > 0) {
    auto l = std::make_unique<Local>();
    STOKER_ASSIGN_OR_RETURN(l->ctx, pipeline::make_context(local->config));
    // The Loader's scheduling class, as its own pools have when there are no workers (batch by
    // default: a waking receive preempts them, they never preempt it). Not SCHED_IDLE: on a
    // host whose CPU other processes keep busy an idle-class thread gets none, and the request
    // it holds stalls in-order delivery (measured: a 2-worker job 38% slower).
    const exec::SchedClass sched = local->config.worker_sched;
    STOKER_ASSIGN_OR_RETURN(
        l->io, exec::ThreadPool::create(
                   {.num_threads = local->config.io_threads, .name = "stoker-lio", .sched = sched}));
    STOKER_ASSIGN_OR_RETURN(l->cpu, exec::ThreadPool::create({.num_threads = local->threads,
                                                              .name = "stoker-lcpu",
                                                              .sched = sched}));
    l->dtype = local->config.rows_dtype();
    std::lock_guard lock(r->mu_);
    r->local_ = std::move(l);
    r->local_threads_ = local->threads;
    r->lanes_[kLocal] = Lane{};
  }
  return r;
}

Receiver::Receiver(std::vector<int> workers, Wire wire) : workers_(std::move(workers)), wire_(wire) {
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
    worker = pick_lane();
    pending_[req.ticket] = Pending{.owner = owner, .item = item, .done = std::move(done),
                                   .worker = worker, .payloads = {}, .local_payloads = {}};
  }
  if (worker == kLocal) {
    run_local(req.ticket, item);
  } else {
    comm_->send(worker, kTagRequest, encode(req));
  }
}

// A worker's work on this process's lane; the answer goes through the wire's encoding and back,
// so the engine sees exactly what a worker's answer would give it.
void Receiver::run_local(std::uint64_t ticket, const pipeline::Item& item) {
  Local* l = local_.get();
  pipeline::Item request;  // what a request carries, nothing more
  request.seq = item.seq;
  request.epoch = item.epoch;
  request.k = item.k;
  request.sample = item.sample;
  (void)l->io->submit([this, l, ticket, request](std::stop_token stop) {
    auto fetched =
        std::make_shared<pipeline::Fetched>(pipeline::read_and_fetch(*l->ctx, request, stop));
    (void)l->cpu->submit([this, l, ticket, fetched] {
      const std::int64_t t0 = now_ns();
      pipeline::Prepared p = pipeline::prepare(*l->ctx, std::move(*fetched));
      Answer a = make_answer(*l->ctx, std::move(p), ticket, wire_, l->dtype, staging_);
      l->busy_ns.fetch_add(now_ns() - t0);
      on_local(ticket, std::move(a.header), std::move(a.payloads));
    });
  });
}

void Receiver::on_local(std::uint64_t ticket, std::vector<std::uint8_t>&& header,
                        std::vector<std::shared_ptr<BufferPool::Buffer>>&& payloads) {
  const std::size_t size = header.size();
  Result<SampleResult> r = decode_result(header);
  STOKER_CHECK(r.ok() && r->ticket == ticket, "cluster: a local answer that does not decode");
  std::function<void(pipeline::Prepared&&)> done;
  pipeline::Prepared p = std::move(r->prepared);
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(ticket);
    STOKER_CHECK(it != pending_.end() && it->second.worker == kLocal,
                 "cluster: unknown local ticket");
    answered(kLocal);
    ++stats_.local_samples;
    stats_.local_bytes += size + r->payload_bytes();
    done = accept(it, *r, p, &payloads);
  }
  if (done) done(std::move(p));
}

std::function<void(pipeline::Prepared&&)> Receiver::accept(
    std::map<std::uint64_t, Pending>::iterator it, const SampleResult& r, pipeline::Prepared& p,
    std::vector<std::shared_ptr<BufferPool::Buffer>>* local) {
  Pending& pend = it->second;
  pend.answered = true;
  pend.payloads = r.payloads;
  const std::uint64_t total = r.payload_bytes();
  auto give_back = [&] {
    for (auto& b : *local) staging_.put(std::move(b));
  };
  if (pend.abandoned) {  // its engine stopped: the payloads are dropped
    if (local != nullptr) {
      give_back();
    } else {
      discard_payloads(pend.worker, r.ticket, pend.payloads);
    }
    pending_.erase(it);
    finished_one();
    return {};
  }
  p.item = pend.item;  // the engine's item (unit, state after it, plan)
  std::function<void(pipeline::Prepared&&)> done = std::move(pend.done);
  if (total > 0) {  // the payloads land at emit (pixels())
    if (local != nullptr) pend.local_payloads = std::move(*local);
    p.remote = pipeline::RemotePixels{.ticket = r.ticket, .bytes = total};
  } else {
    if (local != nullptr) give_back();
    pending_.erase(it);
    finished_one();
  }
  return done;
}

void Receiver::finished_one() {
  if (pending_.empty()) cv_.notify_all();
}

void Receiver::discard_payloads(int worker, std::uint64_t ticket,
                                const std::vector<std::uint64_t>& sizes) {
  for (std::uint64_t bytes : sizes) {
    if (bytes == 0) continue;
    auto scratch = staging_.get(bytes);
    comm_->recv(worker, payload_tag(ticket), scratch->data.get(), bytes, [this, scratch, bytes] {
      staging_.put(scratch);
      std::lock_guard lock(mu_);
      stats_.payload_bytes += bytes;
      stats_.message_bytes += bytes;
    });
  }
}

void Receiver::on_result(int source, std::vector<std::uint8_t>&& bytes) {
  const std::size_t size = bytes.size();
  Result<SampleResult> r = decode_result(bytes);
  if (!r.ok()) {
    std::fprintf(stderr, "stoker cluster: from rank %d: %s\n", source,
                 printable(r.error().to_string()).c_str());
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
    done = accept(it, *r, p, nullptr);
  }
  if (done) done(std::move(p));
}

void Receiver::pixels(std::span<const pipeline::RemoteLanding> samples,
                      const pipeline::MediaEnv& env, image::PixelDType dtype,
                      exec::ThreadPool* helpers,
                      std::vector<std::optional<pipeline::MediumError>>* errors) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t left = 0;
  };
  auto wait = std::make_shared<Wait>();
  // One receive per payload message, every one counted before any can complete.
  struct Landing {
    std::size_t sample, medium;
    // uint8 pixels, a payload of the wrong size, or one the local lane made (from staging_)
    std::shared_ptr<BufferPool::Buffer> staged;
    std::uint8_t* copy_into = nullptr;  // float rows the local lane made: copied here
  };
  std::vector<Landing> landings;
  {
    std::lock_guard lock(mu_);
    std::vector<std::pair<int, std::vector<std::uint64_t>>> sizes(samples.size());
    std::vector<std::vector<std::shared_ptr<BufferPool::Buffer>>> local(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const pipeline::Prepared& p = *samples[i].sample;
      auto it = pending_.find(p.remote->ticket);
      STOKER_CHECK(it != pending_.end() && it->second.answered, "cluster: pixels of an unknown sample");
      sizes[i] = {it->second.worker, it->second.payloads};
      local[i] = std::move(it->second.local_payloads);
      pending_.erase(it);
      if (sizes[i].first == kLocal) continue;  // made here: nothing to receive
      for (std::uint64_t b : sizes[i].second) wait->left += b > 0 ? 1 : 0;
    }
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const pipeline::Prepared& p = *samples[i].sample;
      const auto& [worker, payloads] = sizes[i];
      if (payloads.size() != p.media.size() || samples[i].rows.size() != p.media.size()) {
        (*errors)[i] = pipeline::MediumError{0, data_loss("cluster: " + std::to_string(payloads.size()) +
                                                          " payloads for " + std::to_string(p.media.size()) +
                                                          " media")};
      }
      for (std::size_t j = 0; j < payloads.size(); ++j) {
        const std::uint64_t bytes = payloads[j];
        if (bytes == 0) continue;
        bool fits = j < p.media.size() && j < samples[i].rows.size();
        if (fits) {  // a plan that disagrees with this rank's processor lands nowhere near its rows
          Status st = p.media[j]->fits(env);
          if (!st.ok() && !(*errors)[i]) {
            (*errors)[i] = pipeline::MediumError{j, data_loss("cluster: " + st.error().to_string())};
          }
          fits = st.ok();
        }
        const std::uint64_t want = fits ? payload_bytes(*p.media[j], wire_, env, dtype) : 0;
        Landing l{i, j, nullptr};
        if (bytes != want && !(*errors)[i]) {
          (*errors)[i] = pipeline::MediumError{j, data_loss("cluster: payload of " + std::to_string(bytes) +
                                                            " bytes, expected " + std::to_string(want) +
                                                            " (" + wire_name(wire_) + " wire)")};
        }
        if (worker == kLocal) {  // made here, round-tripped through the wire's encoding
          l.staged = j < local[i].size() ? std::move(local[i][j]) : nullptr;
          STOKER_CHECK(l.staged != nullptr && l.staged->size == bytes,
                       "cluster: a local payload that is not the one its answer announced");
          if (wire_ == Wire::kFloat && bytes == want) l.copy_into = samples[i].rows[j];
          landings.push_back(std::move(l));
          continue;
        }
        std::uint8_t* into = nullptr;
        if (wire_ == Wire::kFloat && bytes == want) {
          into = samples[i].rows[j];
        } else {
          l.staged = staging_.get(bytes);
          into = l.staged->data.get();
        }
        landings.push_back(std::move(l));
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
    }
    for (auto& bufs : local) {  // a local lane's payloads no landing took (0 bytes)
      for (auto& b : bufs) {
        if (b) staging_.put(std::move(b));
      }
    }
    finished_one();
  }
  // Float rows the local lane made: copied into the block (a worker's land there over MPI).
  for (const Landing& l : landings) {
    if (l.copy_into != nullptr) std::memcpy(l.copy_into, l.staged->data.get(), l.staged->size);
  }
  {
    // Not stoppable: MPI writes into the block until the receives complete.
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->left == 0; });
  }
  // uint8 wire: every medium finished from its resized pixels (normalise + patchify) into its
  // rows, on the helpers and this thread.
  auto finishing = std::make_shared<std::vector<const Landing*>>();
  if (wire_ == Wire::kUint8) {
    for (const Landing& l : landings) {
      if (!(*errors)[l.sample]) finishing->push_back(&l);
    }
  }
  struct Job {
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto job = std::make_shared<Job>();
  auto work = [job, finishing, samples, &env, dtype] {
    for (;;) {
      const std::size_t i = job->next.fetch_add(1);
      if (i >= finishing->size()) return;
      const Landing& l = *(*finishing)[i];
      const pipeline::RemoteLanding& s = samples[l.sample];
      const pipeline::Medium& m = *s.sample->media[l.medium];
      m.finish(env, l.staged->data.get(), pipeline::rows_dtype(m.modality(), dtype), s.rows[l.medium]);
      if (job->done.fetch_add(1) + 1 == finishing->size()) {
        std::lock_guard lock(job->mu);
        job->cv.notify_all();
      }
    }
  };
  if (!finishing->empty()) {
    if (helpers != nullptr) {
      const int n = std::min<int>(static_cast<int>(finishing->size()) - 1, helpers->num_threads());
      for (int h = 0; h < n; ++h) (void)helpers->submit(work);
    }
    work();
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == finishing->size(); });
  }
  for (Landing& l : landings) {
    if (l.staged) staging_.put(std::move(l.staged));
  }
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
    if (p.answered) {  // delivered to the engine, its payloads never claimed
      if (p.worker == kLocal) {
        for (auto& b : p.local_payloads) staging_.put(std::move(b));
      } else {
        discard_payloads(p.worker, it->first, p.payloads);
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
