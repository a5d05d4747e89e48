// Media fetching for the pipeline: a Fetcher reads one whole object by URI into memory, taking
// its size from a shared ByteBudget first, so the bytes of media in flight stay bounded (the
// lease is returned when the prepared sample no longer needs the encoded bytes). The one
// implementation is StoreFetcher (store_fetcher.h): every scheme through one io::ObjectStore.
// ByteBudget is thread-safe. Errors: those of io (per object: NotFound, PermissionDenied,
// InvalidArgument, ResourceExhausted, DataLoss; outage: Unavailable, DeadlineExceeded),
// Cancelled (stop while waiting for budget).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/obs/trace.h"

namespace stoker::pipeline {

class ByteBudget {
 public:
  explicit ByteBudget(std::int64_t limit) : limit_(limit) {}

  // Holds `bytes` of the budget until destroyed. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { reset(); }
    void reset();
    std::int64_t bytes() const { return bytes_; }
    // Re-charges the lease to `bytes` without waiting (an async fetch charged an estimate before
    // the object's size was known; the budget may overshoot by the difference, briefly).
    void resize(std::int64_t bytes);

   private:
    friend class ByteBudget;
    Lease(ByteBudget* b, std::int64_t n) : budget_(b), bytes_(n) {}
    ByteBudget* budget_ = nullptr;
    std::int64_t bytes_ = 0;
  };

  // Blocks until `bytes` fit. A request larger than the limit is granted when nothing else is in
  // flight (one huge image must not deadlock the run).
  Result<Lease> acquire(std::int64_t bytes, std::stop_token stop = {});
  std::int64_t in_flight() const;
  std::int64_t peak() const;
  // Records every change of the bytes in flight as counter `counter` of `tracer` (which must
  // outlive the budget); before any lease is taken.
  void trace_to(obs::Tracer* tracer, int counter) {
    tracer_ = tracer;
    trace_counter_ = counter;
  }
  double wait_s() const;  // time acquire() callers spent waiting for budget, summed

 private:
  void release(std::int64_t bytes);
  void charge(std::int64_t bytes);
  const std::int64_t limit_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::int64_t in_flight_ = 0, peak_ = 0;
  std::int64_t wait_ns_ = 0;
  obs::Tracer* tracer_ = nullptr;
  int trace_counter_ = -1;
  void traced() {  // with mu_ held
    if (tracer_ != nullptr) tracer_->counter(trace_counter_, in_flight_);
  }
};

// What a media read is charged before its size is known; corrected when the bytes arrive. A
// sample takes ONE lease for all its images (n × this), so a sample with more images than the
// budget holds is granted alone instead of waiting on its own leases.
constexpr std::int64_t kMediaSizeEstimate = std::int64_t{1} << 20;

// The bytes of a sample's media in flight: one lease, estimates replaced by sizes as they come.
class SampleLease {
 public:
  SampleLease() = default;
  static Result<SampleLease> acquire(ByteBudget& budget, std::size_t images, std::stop_token stop);
  // One image arrived with `bytes` (its estimate is replaced by its size; never waits).
  void arrived(std::int64_t bytes) { lease_.resize(lease_.bytes() - kMediaSizeEstimate + bytes); }
  void reset() { lease_.reset(); }

 private:
  ByteBudget::Lease lease_;
};

// One whole object, read with the caller's byte budget already taken (SampleLease).
class Fetcher {
 public:
  virtual ~Fetcher();
  virtual Result<std::vector<std::uint8_t>> fetch(const std::string& uri) const = 0;
  // Remote fetchers also read without blocking: `done` runs once, on an I/O thread (keep it
  // short). The engine then keeps many requests in flight instead of one per pool thread.
  virtual bool asynchronous() const { return false; }
  virtual void fetch_async(const std::string& uri,
                           std::function<void(Result<std::vector<std::uint8_t>>)> done) const;
};

}  // namespace stoker::pipeline
