// A worker rank of `stoker cluster`: answers the receivers' requests. Each request (one item of
// a receiver's schedule) is read and fetched on the I/O pool, then prepared (template, tokens,
// labels, positions — the same pipeline::prepare as a local run) and every medium made into the
// wire form on the CPU pool (make_answer): finished rows (float/bf16), resized uint8 pixels, or
// left encoded. The result goes back to the asking receiver, each medium's pixels as a separate
// payload message that waits until the receiver assembles the batch that holds it. Stateless: any
// worker may answer any request, so the bytes never depend on which one did. Runs until every
// receiver said stop.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/cluster/comm.h"
#include "stoker/cluster/wire.h"
#include "stoker/pipeline/loader.h"

namespace stoker::cluster {

struct WorkerStats {
  std::uint64_t samples = 0, failed = 0;
  std::uint64_t bytes_sent = 0, bytes_received = 0;
  double busy_s = 0;  // prepare + pixels, summed over threads
  double progress_cpu_s = 0;  // the comm thread's CPU (MPI progress)
};

// One request's answer as a worker makes it from the prepared sample: the result, encoded (every
// medium's plan; on the encoded wire with the media's bytes), and one payload per medium in the
// wire's form (none: a failed sample, no media, the encoded wire). A medium that fails to decode
// fails the sample as the receiver's emit would. Also what a receiver runs for the samples it
// prepares itself (receiver.h), so the bytes are a worker's.
struct Answer {
  std::vector<std::uint8_t> header;  // encode(SampleResult)
  std::vector<std::shared_ptr<BufferPool::Buffer>> payloads;  // from `pool`
  bool failed = false;
};
Answer make_answer(const pipeline::Context& ctx, pipeline::Prepared&& p, std::uint64_t ticket,
                   Wire wire, image::PixelDType dtype, BufferPool& pool);

// `receivers`: how many stops end the loop.
Result<WorkerStats> run_worker(const pipeline::LoaderConfig& config, Wire wire, int receivers);

}  // namespace stoker::cluster
