// Receiver: the RemoteSamples of a receiver rank (pipeline/remote.h). Each item the engine
// submits becomes a request to the worker with the fewest unanswered requests; the worker's
// result becomes the engine's Prepared sample (its media's plans, and on the encoded wire their
// bytes: the engine's emit then produces them as a local run does); at emit, each medium's
// payload is received straight into the batch's rows (float wire) or into a staging buffer and
// finished into them (uint8 wire: Medium::finish — normalise + patchify — on the emit helpers). In flight: the engine's window of
// samples, nothing more (credit-based: a request is a credit; the arena's backpressure stops
// the producer, which stops the requests). Payloads wait on their worker until the batch that
// holds them is assembled (MPI's rendezvous for large messages), so the worker holds at most
// the window's pixels. abandon(engine) (a stopped engine) drains what it requested into scratch;
// drain() waits until nothing is outstanding, then tells every worker to stop.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "stoker/cluster/comm.h"
#include "stoker/cluster/wire.h"
#include "stoker/pipeline/remote.h"

namespace stoker::cluster {

struct ReceiverStats {
  std::uint64_t samples = 0;         // results received (good or failed)
  std::uint64_t payload_bytes = 0;   // pixel payloads received (incl. drained ones)
  std::uint64_t message_bytes = 0;   // every message received (results + payloads)
};

class Receiver final : public pipeline::RemoteSamples {
 public:
  Receiver(std::vector<int> workers, Wire wire);
  ~Receiver() override;

  void submit(const void* owner, const pipeline::Item& item,
              std::function<void(pipeline::Prepared&&)> done) override;
  void pixels(std::span<const pipeline::RemoteLanding> samples, const pipeline::MediaEnv& env,
              image::PixelDType dtype, exec::ThreadPool* helpers,
              std::vector<std::optional<pipeline::MediumError>>* errors) override;
  void abandon(const void* owner) override;

  // Waits until every request is answered and every payload received, sends each worker a stop,
  // and stops the comm thread.
  void drain();
  ReceiverStats stats() const;
  std::uint64_t bytes_sent() const { return comm_->bytes_sent(); }

 private:
  struct Pending {
    const void* owner = nullptr;
    pipeline::Item item;
    std::function<void(pipeline::Prepared&&)> done;
    int worker = 0;
    bool answered = false, abandoned = false;
    std::vector<std::uint64_t> payloads;  // one message per medium (0: none)
  };
  void on_result(int source, std::vector<std::uint8_t>&& bytes);
  // Receives a ticket's payload messages into scratch (an abandoned sample's). mu_ held.
  void discard_payloads(int worker, std::uint64_t ticket, const std::vector<std::uint64_t>& sizes);
  void finished_one();  // a ticket is gone; mu_ held

  std::vector<int> workers_;
  Wire wire_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Pending> pending_;
  std::map<int, int> unanswered_;  // per worker
  std::uint64_t next_ticket_ = 1;
  std::size_t next_worker_ = 0;
  ReceiverStats stats_;
  BufferPool staging_;  // uint8 payloads before normalisation, drained payloads
  std::unique_ptr<Comm> comm_;  // last: its thread calls on_result
};

}  // namespace stoker::cluster
