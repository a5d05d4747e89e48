#include "stoker/cluster/receiver.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>

#include "stoker/base/printable.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

Receiver::Receiver(std::vector<int> workers, Wire wire, const image::ImageProcessor* processor)
    : workers_(std::move(workers)), wire_(wire), processor_(processor) {
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
    pending_[req.ticket] = Pending{.owner = owner, .item = item, .done = std::move(done), .worker = worker};
  }
  comm_->send(worker, kTagRequest, encode(req));
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
      pending_.erase(it);
      std::uint8_t* into = dst[i];
      const std::uint64_t want = wire_ == Wire::kFloat
                                     ? static_cast<std::uint64_t>(p.pixel_rows) * cols * elem
                                     : payload_bytes(p, Wire::kUint8, cols, dtype);
      if (wire_ != Wire::kFloat || bytes != want) {
        staging[i] = staging_.get(bytes);
        into = staging[i]->data.get();
      }
      if (bytes != want) {
        (*errors)[i] = data_loss("cluster: pixel payload of " + std::to_string(bytes) +
                                 " bytes, expected " + std::to_string(want) + " (" +
                                 wire_name(wire_) + " wire)");
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
  {
    // Not stoppable: MPI writes into the block until the receive completes.
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->left == 0; });
  }
  if (wire_ != Wire::kUint8) {  // float: only a payload of the wrong size was staged
    for (auto& b : staging)
      if (b) staging_.put(std::move(b));
    return;
  }
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
  auto give_back = [&] {
    for (auto& b : staging)
      if (b) staging_.put(std::move(b));
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
      if (p.payload > 0) discard_payload(p.worker, it->first, p.payload);
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
