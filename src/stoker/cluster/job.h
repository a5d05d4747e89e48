// The MPI job around `stoker cluster`: initialisation (MPI_THREAD_SERIALIZED: the main thread
// sets up and reports, one Comm thread does all the talking in between), each rank's role from
// its rank alone (ranks 0..R-1 receivers, or `--role` per MPMD app context), a check that every
// rank was given the same flags, the fatal path (a message naming rank, role and host, then
// MPI_Abort, which ends every rank), and the per-rank reports gathered on rank 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::cluster {

struct Job {
  int rank = 0, size = 1;
  std::vector<int> receivers, workers;  // world ranks, ascending
  std::string host;                     // $PMIX_HOSTNAME (mpirun's node name), else gethostname
  bool receiver() const;
  int receiver_index() const;           // among the receivers (-1 for a worker)
  std::string describe() const;         // "rank 3 (worker) on host w2"
};

// Initialises MPI and agrees on the roles. `receivers` > 0: ranks below it receive; `role`
// non-empty ("receiver" | "worker"): this rank's role (MPMD). `fingerprint`: a hash of the
// flags every rank must share. Errors after MPI is up end the job (abort_job).
Job start_job(int receivers, const std::string& role, std::uint64_t fingerprint);
// Prints "stoker cluster: <describe>: <error>" and aborts the whole job (exit code 1).
[[noreturn]] void abort_job(const Job& job, const Error& error);
void end_job();

// One rank's numbers for the summary (rank 0 gathers them).
struct RankReport {
  int rank = 0;
  bool receiver = false;
  std::string host;
  double user_s = 0, sys_s = 0;          // getrusage(RUSAGE_SELF)
  std::uint64_t bytes_sent = 0, bytes_received = 0;
  std::uint64_t samples = 0, batches = 0, failed = 0;
  double elapsed_s = 0, wait_s = 0, first_batch_s = 0;  // receivers: the trainer's
  double wall_s = 0;          // since MPI was initialised
  double progress_cpu_s = 0;  // the comm thread's CPU (MPI progress)
  // Receivers: samples prepared on the receiver's own lane, and what they would have cost on
  // the wire (so bytes per sample describe the wire, whichever lane made a sample).
  std::uint64_t local_samples = 0, local_bytes = 0;
};
RankReport own_report(const Job& job);  // rank, role, host, CPU times
// Rank 0 gets every rank's report, in rank order; the others get an empty vector.
std::vector<RankReport> gather_reports(const Job& job, const RankReport& mine);

struct Summary {
  int receivers = 0, workers = 0;
  std::string wire;
  int batch_size = 0;
  double step_ms = 0;
};
// The summary lines (stdout) and, with a path, the JSON file (README.md "Summary").
Status write_summary(const Summary& s, const std::vector<RankReport>& ranks,
                     const std::string& json_path);

}  // namespace stoker::cluster
