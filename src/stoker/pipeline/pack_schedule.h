// PackSchedule: this rank's share of a GLOBAL pack plan. The epoch order is cut into windows of
// W consecutive global positions; every sample of a window is measured (read, fetch, plan its
// images from their headers, tokenize: exact lengths, nothing decoded) and the window is planned
// into units (batch/pack_plan.h: packs or token-budget batches) in canonical order, heaviest
// vision load first in even windows and last in odd ones. The epoch's units, window after window,
// form one stream; global step s is units [s·world, (s+1)·world) and rank r takes unit
// s·world + r. Every rank computes the same plan, so the state is the job's, not the rank's:
// (epoch, position = first sample of a window, packs = units of that window consumed), valid for
// any world size. The last step of an epoch is filled with repeats of the units before it (as
// torch's DistributedSampler pads), so every rank has a unit in every step.
// Measuring runs ahead on the I/O pool (a bounded number of samples in flight, one window ahead
// of the consumer) or inline without pools. Not thread-safe: next() is for the engine's producer
// (measure tasks synchronise internally). Outages met while measuring stop the run through a
// preset failure; errors: InvalidArgument (a resume state that does not fit the data).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "stoker/batch/pack_collate.h"
#include "stoker/batch/pack_plan.h"
#include "stoker/dataset/order.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/pipeline/prepare.h"
#include "stoker/pipeline/source.h"

namespace stoker::pipeline {

struct PackPlanOptions {
  batch::UnitKind kind = batch::UnitKind::kPack;
  std::int64_t capacity = 8192;             // tokens per pack row / padded batch
  std::uint64_t window = 1000;              // samples planned together
  batch::PackFormat format = batch::PackFormat::kHF;
  std::int64_t align = 1;                   // Megatron sub-sequence multiple
  std::uint32_t plan_id = 1;                // written into every state (checked on resume)
  int measure_in_flight = 8;                // samples measured concurrently (with a pool)
  // The order: position p of epoch e → record id. Empty: the seeded epoch permutation of the
  // records (dataset::EpochPermutation). A mixture's global plan sets it (epochized mode: a pure
  // function of the position), with `num_samples` = the plan's epoch length.
  std::function<std::uint64_t(std::uint64_t epoch, std::uint64_t position)> order_at;
};

// One sample as measured for the plan.
struct Measured {
  std::uint64_t sample = 0;
  std::int64_t tokens = 0, rows = 0;  // input_ids length, pixel rows (vision patches)
  std::optional<SampleFailure> failure;
};

// read_and_fetch + prepare, keeping the lengths only (the bytes are dropped at once).
Measured measure_sample(const Context& ctx, std::uint64_t epoch, std::uint64_t sample,
                        std::stop_token stop);

class PackSchedule final : public ItemSource {
 public:
  // `io` null: measured inline by next(). `start` is a packing state (or a window-aligned one).
  static Result<std::unique_ptr<PackSchedule>> make(const Context& ctx, std::uint64_t num_samples,
                                                    const dataset::OrderConfig& order,
                                                    const dataset::RankInfo& rank,
                                                    std::int64_t epochs, const LoaderState& start,
                                                    const PackPlanOptions& options,
                                                    exec::ThreadPool* io);
  ~PackSchedule() override;

  Next next(bool block, std::stop_token stop, Item* out) override;
  std::vector<SampleFailure> trailing_failures(std::uint64_t* measured) override;
  std::optional<Error> error() const override { return error_; }

 private:
  struct Window;
  struct Shared;
  PackSchedule() = default;

  Window* window(std::uint64_t gseq, bool block, std::stop_token stop, Next* status, Item* out);
  void plan(Window& w);
  SampleFailure measure_failure(const Measured& m, std::int64_t aligned) const;
  Next start_step(bool block, std::stop_token stop, Item* out);
  Next emit_member(Item* out);
  bool next_stream();
  // The window holding stream index `i` of the current epoch stream (must be planned).
  const Window& window_of(std::uint64_t i) const;
  const batch::Unit& unit_at(std::uint64_t i) const;
  LoaderState state_after(std::uint64_t consumed) const;
  static std::uint64_t resolve(std::uint64_t g, std::uint64_t total);
  StepLoad step_load(std::uint64_t begin, std::uint64_t total) const;
  void attach_failures(UnitInfo& info, std::uint64_t end, bool last);

  const Context* ctx_ = nullptr;
  PackPlanOptions options_;
  std::uint64_t n_ = 0;
  dataset::OrderConfig order_;
  int rank_ = 0, world_ = 1;
  std::int64_t epochs_ = 1;
  std::shared_ptr<Shared> shared_;  // windows being measured; measure tasks hold it
  exec::ThreadPool* io_ = nullptr;

  // The current epoch stream (consumer side).
  std::uint64_t epoch_ = 0;
  std::uint64_t first_gseq_ = 0;   // global window number of the stream's first window
  std::uint64_t stream_windows_ = 0;
  std::uint64_t planned_windows_ = 0;
  std::uint64_t step_ = 0;         // steps of this stream this rank has started
  // Planned windows still needed: those of the coming steps and the world - 1 units before.
  std::deque<std::shared_ptr<Window>> stream_;
  bool stream_done_ = false;
  std::vector<SampleFailure> carried_failures_;  // from a stream that had no unit left
  std::uint64_t carried_measured_ = 0;

  // The unit being handed out item by item.
  std::shared_ptr<const UnitInfo> cur_info_;
  std::shared_ptr<Window> cur_window_;
  std::vector<std::uint32_t> cur_members_;
  std::size_t cur_next_ = 0;
  std::uint64_t seq_ = 0;
  std::optional<Error> error_;
  bool stalled_ = false;  // an outage item was handed out: the run stops there
};

}  // namespace stoker::pipeline
