// PlanSchedule: fixed batches of a mixture (mixture_records.h) in the order of the global plan
// (dataset/plan.h) — the only source of order when the data is a mixture spec. Global step t
// holds plan positions [tG, (t+1)G), G = batch_size × world size; rank r takes the contiguous
// slice of G/W positions at r·G/W, so the ranks' batches concatenated in rank order are the
// world-1 stream and every rank has a batch in every step. Items of one step form one batch
// (Item::group): a failed sample leaves its batch short, never pulls in the next step's samples;
// a step whose every sample failed on this rank is an empty batch (0 samples), so every rank
// yields one batch per step (steps()).
// Epochs: step t belongs to epoch floor(tG / T) (T = the plan's epoch length; weighted: Σ N_s);
// `epochs` epochs = Plan::steps_for_epochs(epochs) steps. State after a step: LoaderState
// {epoch, position = (t+1)G, mix = encode_mix(cursor state)}; it resumes exactly at any world
// size dividing the same G. Called by one thread at a time.
// Errors (make): InvalidArgument — G not divisible by the world size, a state of another mixture
// (unless allow_spec_change), of another global batch, or not of a mixture run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/dataset/order.h"
#include "stoker/dataset/plan.h"
#include "stoker/pipeline/source.h"

namespace stoker::pipeline {

// LoaderState::mix <-> PlanState (position and seed are the LoaderState's / the run's).
std::string encode_mix(const dataset::PlanState& s);
Result<dataset::PlanState> decode_mix(std::string_view mix, std::uint64_t position, std::uint64_t seed);

// Per source: samples the plan gave this rank so far, and how many of them were delivered.
struct SourceCounts {
  std::vector<std::uint64_t> planned, delivered, failed;
};

class PlanSchedule final : public ItemSource {
 public:
  static Result<std::unique_ptr<PlanSchedule>> make(std::shared_ptr<const dataset::Plan> plan,
                                                    std::vector<std::uint64_t> first_id,
                                                    const dataset::RankInfo& rank, std::int64_t epochs,
                                                    const LoaderState& start, bool allow_spec_change,
                                                    std::vector<std::string>* warnings);
  Next next(bool block, std::stop_token stop, Item* out) override;
  bool steps() const override { return true; }
  // The source (mixture leaf) of global record id `sample`.
  std::uint32_t source_of(std::uint64_t sample) const;

 private:
  PlanSchedule(std::shared_ptr<const dataset::Plan> plan, dataset::PlanCursor cursor)
      : plan_(std::move(plan)), cursor_(std::move(cursor)) {}
  std::uint64_t epoch_of_step(std::uint64_t t) const;

  std::shared_ptr<const dataset::Plan> plan_;
  dataset::PlanCursor cursor_;
  std::vector<std::uint64_t> first_id_;
  std::uint64_t world_ = 1;
  std::uint64_t end_step_ = 0;  // UINT64_MAX: endless
  std::vector<dataset::PlanItem> items_;
  std::size_t next_ = 0;
  std::uint64_t step_ = 0, seq_ = 0, k_ = 0, epoch_ = 0;
  std::shared_ptr<const std::string> before_, after_;
  std::uint64_t after_epoch_ = 0;
};

}  // namespace stoker::pipeline
