#include "stoker/cluster/receiver.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>

#include "stoker/base/printable.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

Receiver::Receiver(std::vector<int> workers, Wire wire) : workers_(std::move(workers)), wire_(wire) {
  for (int w : workers_) unanswered_[w] = 0;
  comm_ = std::make_unique<Comm>(std::vector<int>{kTagResult},
                                 [this](int source, int, std::vector<std::uint8_t>&& bytes) {
                                   on_result(source, std::move(bytes));
                                 });
}

Receiver::~Receiver() { comm_->stop(); }

void Receiver::submit(const void* owner, const pipeline::Item& item,
                      std::function<void(pipeline::Prepared&&)> done) {
  Request req{.seq = item.seq, .epoch = item.epoch, .k = item.k, .sample = item.sample};
  int worker = 0;
  {
    std::lock_guard lock(mu_);
    req.ticket = next_ticket_++;
    // The worker with the fewest unanswered requests; ties in turn.
    std::size_t best = next_worker_ % workers_.size();
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const std::size_t j = (next_worker_ + i) % workers_.size();
      if (unanswered_[workers_[j]] < unanswered_[workers_[best]]) best = j;
    }
    next_worker_ = best + 1;
    worker = workers_[best];
    ++unanswered_[worker];
    pending_[req.ticket] = Pending{.owner = owner, .item = item, .done = std::move(done), .worker = worker,
                                   .payloads = {}};
  }
  comm_->send(worker, kTagRequest, encode(req));
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
    --unanswered_[source];
    ++stats_.samples;
    Pending& pend = it->second;
    pend.answered = true;
    pend.payloads = r->payloads;
    const std::uint64_t total = r->payload_bytes();
    if (pend.abandoned) {
      discard_payloads(source, r->ticket, pend.payloads);
      pending_.erase(it);
      finished_one();
      return;
    }
    p.item = pend.item;  // the engine's item (unit, state after it, plan)
    done = std::move(pend.done);
    if (total > 0) {
      p.remote = pipeline::RemotePixels{.ticket = r->ticket, .bytes = total};
    } else {
      pending_.erase(it);
      finished_one();
    }
  }
  done(std::move(p));
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
    std::shared_ptr<BufferPool::Buffer> staged;  // uint8 pixels, or a payload of the wrong size
  };
  std::vector<Landing> landings;
  {
    std::lock_guard lock(mu_);
    std::vector<std::pair<int, std::vector<std::uint64_t>>> sizes(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const pipeline::Prepared& p = *samples[i].sample;
      auto it = pending_.find(p.remote->ticket);
      STOKER_CHECK(it != pending_.end() && it->second.answered, "cluster: pixels of an unknown sample");
      sizes[i] = {it->second.worker, it->second.payloads};
      pending_.erase(it);
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
        const bool fits = j < p.media.size() && j < samples[i].rows.size();
        const std::uint64_t want = fits ? payload_bytes(*p.media[j], wire_, env, dtype) : 0;
        Landing l{i, j, nullptr};
        std::uint8_t* into = nullptr;
        if (wire_ == Wire::kFloat && bytes == want) {
          into = samples[i].rows[j];
        } else {
          l.staged = staging_.get(bytes);
          into = l.staged->data.get();
        }
        if (bytes != want && !(*errors)[i]) {
          (*errors)[i] = pipeline::MediumError{j, data_loss("cluster: payload of " + std::to_string(bytes) +
                                                            " bytes, expected " + std::to_string(want) +
                                                            " (" + wire_name(wire_) + " wire)")};
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
    finished_one();
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
      s.sample->media[l.medium]->finish(env, l.staged->data.get(), dtype, s.rows[l.medium]);
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
      discard_payloads(p.worker, it->first, p.payloads);
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
  return stats_;
}

}  // namespace stoker::cluster
