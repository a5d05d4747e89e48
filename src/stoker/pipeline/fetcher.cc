#include "stoker/pipeline/fetcher.h"

#include <chrono>

namespace stoker::pipeline {

ByteBudget::Lease& ByteBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    reset();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
  }
  return *this;
}

void ByteBudget::Lease::reset() {
  if (budget_ != nullptr) budget_->release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

Result<ByteBudget::Lease> ByteBudget::acquire(std::int64_t bytes, std::stop_token stop) {
  std::unique_lock lock(mu_);
  auto fits = [&] { return in_flight_ == 0 || in_flight_ + bytes <= limit_; };
  if (!fits()) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = cv_.wait(lock, stop, fits);
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - t0).count();
    if (!ok) return cancelled("stopped while waiting for fetch budget");
  }
  in_flight_ += bytes;
  if (in_flight_ > peak_) peak_ = in_flight_;
  traced();
  return Lease(this, bytes);
}

void ByteBudget::Lease::resize(std::int64_t bytes) {
  if (budget_ == nullptr || bytes == bytes_) return;
  if (bytes > bytes_) {
    budget_->charge(bytes - bytes_);
  } else {
    budget_->release(bytes_ - bytes);
  }
  bytes_ = bytes;
}

void ByteBudget::charge(std::int64_t bytes) {
  std::lock_guard lock(mu_);
  in_flight_ += bytes;
  if (in_flight_ > peak_) peak_ = in_flight_;
  traced();
}

void ByteBudget::release(std::int64_t bytes) {
  {
    std::lock_guard lock(mu_);
    in_flight_ -= bytes;
    traced();
  }
  cv_.notify_all();
}

std::int64_t ByteBudget::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

double ByteBudget::wait_s() const {
  std::lock_guard lock(mu_);
  return static_cast<double>(wait_ns_) * 1e-9;
}

std::int64_t ByteBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

Result<SampleLease> SampleLease::acquire(ByteBudget& budget, std::size_t images,
                                         std::stop_token stop) {
  SampleLease s;
  STOKER_ASSIGN_OR_RETURN(s.lease_,
                          budget.acquire(static_cast<std::int64_t>(images) * kMediaSizeEstimate, stop));
  return s;
}

Fetcher::~Fetcher() = default;

void Fetcher::fetch_async(const std::string& uri,
                          std::function<void(Result<std::vector<std::uint8_t>>)> done) const {
  done(unimplemented("this fetcher has no asynchronous reads: " + uri));
}

}  // namespace stoker::pipeline
