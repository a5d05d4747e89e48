// Samples prepared elsewhere (scale-out: cluster/receiver.h over MPI). An engine given a
// RemoteSamples (LoaderConfig::remote) hands each item to it instead of reading, fetching and
// preparing the sample itself; the prepared sample comes back through `done` (tokens, labels,
// positions, image plans, or the sample's failure) and its pixel rows, when they travel apart
// (Prepared::remote), are written into the batch by pixels() once the batch's block exists — so
// the network is the only copy. Everything else — order, reorder buffer, failure policy, state,
// packing plan, arena — is the engine's, unchanged: which worker made a sample never changes a
// byte. Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/exec/thread_pool.h"
#include "stoker/image/processor.h"

namespace stoker::pipeline {

struct Item;
struct Prepared;
struct MediaEnv;

// The rows of a prepared sample's media that are still on their way (the ticket is the
// implementation's; bytes: what arrives for the sample, whatever its wire form).
struct RemotePixels {
  std::uint64_t ticket = 0;
  std::uint64_t bytes = 0;
};

// Where a remote sample's media land: rows[j] is where medium j (of sample->media) writes its
// rows in the batch block.
struct RemoteLanding {
  const Prepared* sample = nullptr;
  std::vector<std::uint8_t*> rows;
};

// Medium `medium` (of the sample's media) could not be written.
struct MediumError {
  std::size_t medium = 0;
  Error error;
};

class RemoteSamples {
 public:
  virtual ~RemoteSamples() = default;
  // Starts item's work elsewhere for `owner` (an engine; several may share one RemoteSamples, as
  // `stoker serve`'s per-rank Loaders do); `done` receives the prepared sample, on any thread,
  // exactly once unless abandon(owner) came first.
  virtual void submit(const void* owner, const Item& item,
                      std::function<void(Prepared&&)> done) = 0;
  // Writes the rows of every medium of each sample (those with `remote` set) where its landing
  // says, in `dtype`; blocks until all are in place. `env`: the engine's processors (a medium
  // shipped as resized uint8 pixels is finished here); `helpers` (may be null) may run
  // per-medium work. (*errors)[i] set: sample i's rows could not be written (it fails).
  virtual void pixels(std::span<const RemoteLanding> samples, const MediaEnv& env,
                      image::PixelDType dtype, exec::ThreadPool* helpers,
                      std::vector<std::optional<MediumError>>* errors) = 0;
  // `owner` stops: what it submitted and pixels() did not write yet is dropped (its `done` is
  // not called any more).
  virtual void abandon(const void* owner) = 0;
};

}  // namespace stoker::pipeline
