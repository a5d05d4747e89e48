// The producer core behind every Loader mode. Schedule walks this rank's items over epochs
// (RankShard per epoch, from a resume position). Engine keeps up to `window` items in flight —
// read_and_fetch on the I/O pool, then prepare on the CPU pool, or both inline when there are no
// pools (serial mode) — and collects their results in a reorder buffer keyed by sequence number;
// produce() takes results strictly in order, skips and budgets failures, and once it has the
// batch's samples allocates one arena block and emits into it. produce() is called by one thread
// at a time (the consumer in serial/concurrent mode, the producer thread in prefetch mode).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <stop_token>
#include <vector>

#include "stoker/batch/arena.h"
#include "stoker/dataset/order.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/pipeline/batch.h"
#include "stoker/pipeline/policy.h"
#include "stoker/pipeline/prepare.h"
#include "stoker/pipeline/source.h"
#include "stoker/pipeline/state.h"

namespace stoker::pipeline {

// Fixed batches: this rank's strided share of each epoch's order (RankShard), from a resume
// position; each item carries the state once it is consumed.
class Schedule final : public ItemSource {
 public:
  static Result<std::unique_ptr<Schedule>> make(std::uint64_t num_samples,
                                                const dataset::OrderConfig& order,
                                                const dataset::RankInfo& rank,
                                                std::int64_t epochs, const LoaderState& start);
  // The next item, with the state once it is consumed; nullopt after the last epoch.
  std::optional<Item> next();
  Next next(bool, std::stop_token, Item* out) override {
    std::optional<Item> item = next();
    if (!item) return Next::kEnd;
    *out = std::move(*item);
    return Next::kItem;
  }

 private:
  Schedule() = default;
  Status open_epoch(std::uint64_t epoch, std::uint64_t start);
  std::uint64_t n_ = 0;
  dataset::OrderConfig order_;
  int rank_ = 0, world_ = 1;
  std::int64_t epochs_ = 1;
  std::uint64_t epoch_ = 0, k_ = 0, seq_ = 0;
  std::optional<dataset::RankShard> shard_;
  bool done_ = false;
};

// What one produce() call yields, in delivery order: a batch, or the end, or a fatal error; plus
// the failures consumed on the way (to report at delivery) and the state after it.
struct ReadyBatch {
  std::optional<Batch> batch;
  std::shared_ptr<const UnitInfo> unit;  // packing / token budgets: the unit delivered
  std::int64_t real_tokens = 0, computed_tokens = 0;
  std::vector<SampleFailure> failures;
  std::optional<LoaderState> state_after;
  std::optional<Error> fatal;
  bool end = false;
};

// Samples between the schedule and delivery, now.
struct QueueDepths {
  std::int64_t in_flight = 0;  // submitted, not yet taken in order (read, fetch, prepare, or done)
  std::int64_t prepared = 0;   // prepared, waiting in the reorder buffer
};

// The batch fields are the LoaderConfig's own (BatchOptions, loader_config.h): one struct.
struct EngineOptions : BatchOptions {
  std::size_t window = 1;
  // Serial / concurrent: submit only what the current batch still needs (≤ window), so nothing
  // is computed ahead of next(). Prefetch: keep the window full.
  bool on_demand = false;
  std::uint64_t errors_before = 0;  // failures already reported before a resume
  // The model's (model/family.h): its pad id, the rows of a sample's positions and whether
  // position_ids are float32 (Model::float_positions) rather than int64.
  std::int64_t pad_id = 0;
  int sample_rows = 1;
  bool float_positions = false;
  RemoteSamples* remote = nullptr;  // samples prepared elsewhere (LoaderConfig::remote)
};

class Engine {
 public:
  // `cpu` / `io` null: everything runs inline on the produce() caller (serial mode). `emit`
  // (optional) helps process a batch's images into its block (decode, resize, normalise,
  // patchify: the heavy part of the work); a pool of its own so the helpers do not queue behind
  // prepare tasks.
  Engine(const Context& ctx, std::unique_ptr<ItemSource> source, std::shared_ptr<batch::Arena> arena,
         exec::ThreadPool* cpu, exec::ThreadPool* io, exec::ThreadPool* emit,
         const EngineOptions& options);
  ~Engine();  // the pools must be shut down first (tasks hold `this`)

  ReadyBatch produce(std::stop_token stop);
  double arena_wait_s() const;
  double sample_wait_s() const;  // producer time waiting for the next prepared sample
  double emit_s() const;  // producer time assembling batches (decode into the block), arena
                          // waits excluded
  QueueDepths depths() const;

 private:
  void top_up(std::size_t need);
  void submit(const Item& item);
  void deliver(Prepared&& p);
  std::optional<Prepared> take(std::stop_token stop);
  std::optional<Error> count_failure(const SampleFailure& f);
  std::optional<Error> end_of_data_check() const;

  struct SeqFailure {
    std::uint64_t seq;
    SampleFailure failure;
  };
  enum class Collect { kDone, kStop };
  // `taken`: items consumed by this produce() call so far; with a source of steps
  // (ItemSource::steps) a group whose every item failed sets `whole` (an empty batch).
  Collect collect(std::vector<Prepared>& goods, std::uint64_t& epoch, ReadyBatch& out,
                  std::vector<SeqFailure>& failures, std::uint64_t& taken, bool& whole,
                  std::stop_token stop);
  // Packing / token budgets: takes the items of the next unit (failed ones are not replaced).
  // `whole` tells a unit whose every sample failed from the end of the data.
  Collect collect_unit(std::vector<Prepared>& goods, std::uint64_t& epoch, ReadyBatch& out,
                       std::vector<SeqFailure>& failures, bool& whole, std::stop_token stop);
  bool next_prepared(std::size_t need, ReadyBatch& out, std::stop_token stop, Collect* result);
  // True when the batch in hand is the schedule's last: the source has ended and every item it
  // gave was taken (none carried into a next batch). The arena then stops warming ahead.
  bool nothing_after() const;

  // A medium of goods[sample] that failed to produce its rows in its batch: its modality and
  // its index among the sample's media of that modality ("video 1").
  struct BrokenMedium {
    std::size_t sample;
    const Modality* modality;
    std::size_t index;
    Error error;
  };
  Result<Batch> emit(std::vector<Prepared>& goods, std::uint64_t epoch, std::stop_token stop,
                     std::vector<BrokenMedium>* broken, ReadyBatch& out);
  // One pack row (kPack) in the HF or Megatron form.
  Result<Batch> emit_pack(std::vector<Prepared>& goods, std::uint64_t epoch, std::stop_token stop,
                          std::vector<BrokenMedium>* broken, ReadyBatch& out);
  // Allocates a block of `bytes` (waiting for arena space, timed), places place(block) in it,
  // stamped with this step and `epoch`, and produces every medium of `goods` straight into its
  // rows; samples whose media fail go to `broken` (the batch is then not to be delivered).
  Result<Batch> start_batch(const std::vector<Prepared>& goods, std::uint64_t bytes,
                            const std::function<batch::BatchLayout(batch::Block)>& place,
                            std::uint64_t epoch, std::stop_token stop,
                            std::vector<BrokenMedium>* broken);
  // Every medium of `goods` into its rows of `layout` (one job loop on this thread and the emit
  // helpers; a remote sample's rows through RemoteSamples::pixels).
  void process_media(const std::vector<Prepared>& goods, const batch::BatchLayout& layout,
                     std::vector<BrokenMedium>* broken);

  const Context& ctx_;
  std::unique_ptr<ItemSource> source_;
  std::shared_ptr<batch::Arena> arena_;
  exec::ThreadPool* cpu_;
  exec::ThreadPool* io_;
  exec::ThreadPool* emit_;
  EngineOptions options_;

  // Fetched samples wait here for a CPU thread, lowest sequence number first: the sample the
  // reorder buffer needs next is prepared next, whatever order the I/O finished in.
  struct BySeq {
    bool operator()(const std::unique_ptr<Fetched>& a, const std::unique_ptr<Fetched>& b) const {
      return a->item.seq > b->item.seq;
    }
  };
  std::mutex fetched_mu_;
  std::priority_queue<std::unique_ptr<Fetched>, std::vector<std::unique_ptr<Fetched>>, BySeq>
      fetched_;

  mutable std::mutex mu_;
  std::condition_variable_any ready_cv_;
  std::map<std::uint64_t, Prepared> done_;  // the reorder buffer
  std::uint64_t submitted_ = 0, next_take_ = 0;
  bool schedule_done_ = false;

  std::optional<Prepared> carried_;
  std::stop_token stop_;  // produce()'s, for a source that waits for its plan in top_up  // first item of the next epoch, taken while flushing
  // failed_: every failure since the epoch-0 start (the state's `errors`, carried over resumes;
  // saturates at 2^64-1, never wraps to 0); failed_here_: this run's, for the rate budget.
  std::uint64_t failed_ = 0, failed_here_ = 0, seen_ = 0, step_ = 0;
  std::uint64_t group_ = 0;  // the group of the last item consumed (Item::group)
  std::atomic<std::int64_t> arena_wait_ns_{0}, sample_wait_ns_{0}, emit_ns_{0};

  // Asynchronous fetches complete on the store's I/O thread, possibly after the engine is gone:
  // they reach it only through the gate, which the destructor closes.
  void submit_async(const Item& item);
  void submit_remote(const Item& item);
  struct AsyncGate {
    explicit AsyncGate(Engine* e) : engine(e) {}
    std::mutex mu;
    Engine* engine;
  };
  std::shared_ptr<AsyncGate> gate_ = std::make_shared<AsyncGate>(this);
};

}  // namespace stoker::pipeline
