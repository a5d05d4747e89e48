// Samples prepared elsewhere (scale-out: cluster/receiver.h over MPI). An engine given a
// RemoteSamples (LoaderConfig::remote) hands each item to it instead of reading, fetching and
// preparing the sample itself; the prepared sample comes back through `done` (tokens, labels,
// positions, image plans, or the sample's failure) and its pixel rows, when they travel apart
// (Prepared::remote), are written into the batch by pixels() once the batch's block exists — so
// the network is the only copy. Everything else — order, reorder buffer, failure policy, state,
// packing plan, arena — is the engine's, unchanged: which worker made a sample never changes a
// byte. Implementations are thread-safe.
#pragma once

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

// Pixel rows of a prepared sample that are still on their way (the ticket is the
// implementation's; bytes: what arrives for the sample, whatever its wire form).
struct RemotePixels {
  std::uint64_t ticket = 0;
  std::uint64_t bytes = 0;
};

class RemoteSamples {
 public:
  virtual ~RemoteSamples() = default;
  // Starts item's work elsewhere for `owner` (an engine; several may share one RemoteSamples, as
  // `stoker serve`'s per-rank Loaders do); `done` receives the prepared sample, on any thread,
  // exactly once unless abandon(owner) came first.
  virtual void submit(const void* owner, const Item& item,
                      std::function<void(Prepared&&)> done) = 0;
  // Writes the pixel rows of each sample (those with `remote` set) at dst[i] (its first row in
  // the batch), in `dtype`; blocks until all are in place. `helpers` (may be null) may run
  // per-image work. (*errors)[i] set: sample i's pixels could not be written (it fails).
  virtual void pixels(std::span<const Prepared* const> samples, std::span<std::uint8_t* const> dst,
                      image::PixelDType dtype, exec::ThreadPool* helpers,
                      std::vector<std::optional<Error>>* errors) = 0;
  // `owner` stops: what it submitted and pixels() did not write yet is dropped (its `done` is
  // not called any more).
  virtual void abandon(const void* owner) = 0;
};

}  // namespace stoker::pipeline
