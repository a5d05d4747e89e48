// Receiver: the RemoteSamples of a receiver rank (pipeline/remote.h). Each item the engine
// submits becomes a request to the lane expected to answer first — a worker, or the receiver's
// own lane — at (unanswered + 1) × the lane's measured interval between answers; the answer
// becomes the engine's Prepared sample (its media's plans, and on the encoded wire their bytes:
// the engine's emit then produces them as a local run does); at emit, each medium's payload is
// received straight into the batch's rows (float wire) or into a staging buffer and finished
// into them (uint8 wire: Medium::finish — normalise + patchify — on the emit helpers). In
// flight: the engine's window of samples, nothing more (credit-based: a request is a credit; the
// arena's backpressure stops the producer, which stops the requests). Payloads wait on their
// worker until the batch that holds them is assembled (MPI's rendezvous for large messages), so
// the worker holds at most the window's pixels. abandon(engine) (a stopped engine) drains what it
// requested into scratch; drain() waits until nothing is outstanding, then tells every worker to
// stop.
// The receiver prepares samples too (`local`): a lane of its own that runs a worker's code
// (make_answer) on threads of the Loader's scheduling class (SCHED_BATCH by default, as its
// pools have with no workers: receiving, which wakes and sleeps, preempts them); every answer
// goes through the wire encoding and back (decode_result: every medium's plan, of every kind),
// and its payloads are copied (float) or finished (uint8) into the block at emit as a worker's
// would be — so which lane made a sample never changes a byte. It holds at most one request per
// thread plus one (a request it holds waits for its CPU, and delivery is in order).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "stoker/cluster/comm.h"
#include "stoker/cluster/wire.h"
#include "stoker/pipeline/loader_config.h"
#include "stoker/pipeline/remote.h"

namespace stoker::cluster {

struct ReceiverStats {
  std::uint64_t samples = 0;         // results received (good or failed)
  std::uint64_t payload_bytes = 0;   // pixel payloads received (incl. drained ones)
  std::uint64_t message_bytes = 0;   // every message received (results + payloads)
  std::uint64_t local_samples = 0;   // prepared by the receiver itself
  std::uint64_t local_bytes = 0;     // what those would have cost on the wire (result + payloads)
  double local_busy_s = 0;           // the local lane's threads, summed
  double progress_cpu_s = 0;         // the comm thread's CPU (MPI progress)
};

// The receiver's own lane: its Loader config (for the same context a worker makes) and threads.
struct LocalLane {
  pipeline::LoaderConfig config;
  int threads = 1;
};

class Receiver final : public pipeline::RemoteSamples {
 public:
  // `local`: the receiver prepares samples too (nullopt: it only receives).
  static Result<std::shared_ptr<Receiver>> create(std::vector<int> workers, Wire wire,
                                                  std::optional<LocalLane> local);
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
    int worker = 0;  // a world rank, or kLocal
    bool answered = false, abandoned = false;
    std::vector<std::uint64_t> payloads;  // one message per medium (0: none)
    // kLocal: the payloads themselves (from staging_), until emit.
    std::vector<std::shared_ptr<BufferPool::Buffer>> local_payloads;
  };
  // A lane's measured pace: the interval between its answers while it had work (EWMA).
  struct Lane {
    int unanswered = 0;
    double interval_s = 0;      // 0: not measured yet
    std::int64_t since_ns = 0;  // the last answer, or when it got work while idle
  };
  static constexpr int kLocal = -1;  // the local lane's "rank"
  struct Local;
  int pick_lane();          // mu_ held
  void answered(int lane);  // mu_ held
  void run_local(std::uint64_t ticket, const pipeline::Item& item);
  void on_local(std::uint64_t ticket, std::vector<std::uint8_t>&& header,
                std::vector<std::shared_ptr<BufferPool::Buffer>>&& payloads);
  void on_result(int source, std::vector<std::uint8_t>&& bytes);
  // Pending ticket `it` answered with `r` (mu_ held; `local`: the local lane's payloads, null for
  // a worker's): an abandoned sample's payloads dropped, else `p` gets the engine's item and, with
  // payloads, waits for pixels(). Returns the engine's callback (empty: none), run after the lock.
  std::function<void(pipeline::Prepared&&)> accept(
      std::map<std::uint64_t, Pending>::iterator it, const SampleResult& r, pipeline::Prepared& p,
      std::vector<std::shared_ptr<BufferPool::Buffer>>* local);
  // Receives a ticket's payload messages into scratch (an abandoned sample's). mu_ held.
  void discard_payloads(int worker, std::uint64_t ticket, const std::vector<std::uint64_t>& sizes);
  void finished_one();  // a ticket is gone; mu_ held

  std::vector<int> workers_;
  Wire wire_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Pending> pending_;
  std::map<int, Lane> lanes_;  // per worker rank, and kLocal
  int local_threads_ = 0;      // 0: no local lane
  std::uint64_t next_ticket_ = 1;
  std::size_t next_worker_ = 0;
  ReceiverStats stats_;
  // uint8 payloads before normalisation, drained payloads, the local lane's payloads.
  BufferPool staging_;
  std::unique_ptr<Local> local_;  // before comm_: destroyed after it
  std::unique_ptr<Comm> comm_;  // last: its thread calls on_result
};

}  // namespace stoker::cluster
