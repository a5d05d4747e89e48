#include "stoker/cluster/job.h"

#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "stoker/base/file.h"
#include "stoker/base/printable.h"
#include "stoker/cluster/wire.h"

namespace stoker::cluster {

bool Job::receiver() const {
  return std::find(receivers.begin(), receivers.end(), rank) != receivers.end();
}

int Job::receiver_index() const {
  auto it = std::find(receivers.begin(), receivers.end(), rank);
  return it == receivers.end() ? -1 : static_cast<int>(it - receivers.begin());
}

std::string Job::describe() const {
  return "rank " + std::to_string(rank) + " (" + (receiver() ? "receiver" : "worker") +
         ") on host " + host;
}

namespace {

double g_start_wtime = 0;  // MPI_Wtime() right after MPI_Init

std::string host_name() {
  if (const char* h = std::getenv("PMIX_HOSTNAME"); h != nullptr && *h) return h;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) return buf;
  return "?";
}

// What every rank tells every other at start.
struct Hello {
  std::uint64_t fingerprint;
  std::int32_t role;  // 0: from --receivers, 1: --role receiver, 2: --role worker
  std::int32_t receivers;
};

}  // namespace

Job start_job(int receivers, const std::string& role, std::uint64_t fingerprint) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  g_start_wtime = MPI_Wtime();
  Job job;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.size);
  job.host = host_name();
  if (provided < MPI_THREAD_SERIALIZED) {
    abort_job(job, unimplemented("this MPI library does not provide MPI_THREAD_SERIALIZED"));
  }
  int* tag_ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (flag && *tag_ub < kPayloadBase + kPayloadTags) {
    abort_job(job, unimplemented("MPI_TAG_UB " + std::to_string(*tag_ub) + " is below the " +
                                 std::to_string(kPayloadBase + kPayloadTags) + " tags stoker uses"));
  }
  Hello mine{fingerprint, role.empty() ? 0 : (role == "receiver" ? 1 : 2), receivers};
  std::vector<Hello> all(static_cast<std::size_t>(job.size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < job.size; ++r) {
    const Hello& h = all[static_cast<std::size_t>(r)];
    if (h.fingerprint != all[0].fingerprint) {
      abort_job(job, invalid_argument("rank " + std::to_string(r) +
                                      " was given other flags than rank 0 (every rank needs the "
                                      "same data, model and batch flags; only --role may differ)"));
    }
    if ((h.role == 0) != (all[0].role == 0)) {
      abort_job(job, invalid_argument("ranks mix --role and --receivers: give --role to every "
                                      "app context or to none"));
    }
    const bool is_receiver = h.role == 0 ? r < h.receivers : h.role == 1;
    (is_receiver ? job.receivers : job.workers).push_back(r);
  }
  if (all[0].role == 0 && all[0].receivers > job.size) {
    abort_job(job, invalid_argument("--receivers " + std::to_string(all[0].receivers) +
                                    " but mpirun started " + std::to_string(job.size) + " ranks"));
  }
  if (job.receivers.empty()) {
    abort_job(job, invalid_argument("no receiver: --receivers " + std::to_string(receivers) +
                                    " with " + std::to_string(job.size) + " ranks"));
  }
  return job;
}

void abort_job(const Job& job, const Error& error) {
  std::fprintf(stderr, "stoker cluster: %s: %s\n", job.describe().c_str(),
               printable(error.to_string()).c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void end_job() { MPI_Finalize(); }

RankReport own_report(const Job& job) {
  RankReport r;
  r.rank = job.rank;
  r.receiver = job.receiver();
  r.host = job.host;
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  r.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  r.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  r.wall_s = MPI_Wtime() - g_start_wtime;
  return r;
}

namespace {
struct PackedReport {
  std::int32_t rank, receiver;
  char host[64];
  double user_s, sys_s;
  std::uint64_t bytes_sent, bytes_received, samples, batches, failed;
  double elapsed_s, wait_s, first_batch_s, wall_s, progress_cpu_s;
  std::uint64_t local_samples, local_bytes;
};
}  // namespace

std::vector<RankReport> gather_reports(const Job& job, const RankReport& m) {
  PackedReport p{};
  p.rank = m.rank;
  p.receiver = m.receiver ? 1 : 0;
  std::strncpy(p.host, m.host.c_str(), sizeof p.host - 1);
  p.user_s = m.user_s;
  p.sys_s = m.sys_s;
  p.bytes_sent = m.bytes_sent;
  p.bytes_received = m.bytes_received;
  p.samples = m.samples;
  p.batches = m.batches;
  p.failed = m.failed;
  p.elapsed_s = m.elapsed_s;
  p.wait_s = m.wait_s;
  p.first_batch_s = m.first_batch_s;
  p.wall_s = m.wall_s;
  p.progress_cpu_s = m.progress_cpu_s;
  p.local_samples = m.local_samples;
  p.local_bytes = m.local_bytes;
  std::vector<PackedReport> all(job.rank == 0 ? static_cast<std::size_t>(job.size) : 0);
  MPI_Gather(&p, sizeof p, MPI_BYTE, all.data(), sizeof p, MPI_BYTE, 0, MPI_COMM_WORLD);
  std::vector<RankReport> out;
  for (const PackedReport& q : all) {
    RankReport r;
    r.rank = q.rank;
    r.receiver = q.receiver != 0;
    r.host = std::string(q.host, strnlen(q.host, sizeof q.host));
    r.user_s = q.user_s;
    r.sys_s = q.sys_s;
    r.bytes_sent = q.bytes_sent;
    r.bytes_received = q.bytes_received;
    r.samples = q.samples;
    r.batches = q.batches;
    r.failed = q.failed;
    r.elapsed_s = q.elapsed_s;
    r.wait_s = q.wait_s;
    r.first_batch_s = q.first_batch_s;
    r.wall_s = q.wall_s;
    r.progress_cpu_s = q.progress_cpu_s;
    r.local_samples = q.local_samples;
    r.local_bytes = q.local_bytes;
    out.push_back(std::move(r));
  }
  return out;
}

Status write_summary(const Summary& s, const std::vector<RankReport>& ranks,
                     const std::string& json_path) {
  std::uint64_t samples = 0, batches = 0, wire_bytes = 0, local_samples = 0, local_bytes = 0;
  double elapsed = 0, wait_sum = 0, steady_sum = 0, wait_max = 0;
  int receivers = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const RankReport& r : ranks) {
    nlohmann::json j = {{"rank", r.rank}, {"role", r.receiver ? "receiver" : "worker"},
                        {"host", r.host}, {"cpu_s", r.user_s + r.sys_s}, {"user_s", r.user_s},
                        {"sys_s", r.sys_s}, {"bytes_sent", r.bytes_sent},
                        {"bytes_received", r.bytes_received}, {"samples", r.samples},
                        {"wall_s", r.wall_s}, {"progress_cpu_s", r.progress_cpu_s}};
    const double progress_share = r.wall_s > 0 ? r.progress_cpu_s / r.wall_s : 0;
    std::printf("stoker cluster: rank %d %s host %s: cpu %.2f s (user %.2f sys %.2f; MPI progress "
                "thread %.2f s = %.1f%% of a core over %.1f s), sent %llu B, received %llu B, "
                "samples %llu",
                r.rank, r.receiver ? "receiver" : "worker", r.host.c_str(), r.user_s + r.sys_s,
                r.user_s, r.sys_s, r.progress_cpu_s, 100 * progress_share, r.wall_s,
                static_cast<unsigned long long>(r.bytes_sent),
                static_cast<unsigned long long>(r.bytes_received),
                static_cast<unsigned long long>(r.samples));
    if (r.receiver) {
      std::printf(" (%llu prepared on its own lane)", static_cast<unsigned long long>(r.local_samples));
    }
    std::printf("\n");
    if (r.receiver) {
      ++receivers;
      samples += r.samples;
      batches += r.batches;
      wire_bytes += r.bytes_received;
      local_samples += r.local_samples;
      local_bytes += r.local_bytes;
      j["local_samples"] = r.local_samples;
      elapsed = std::max(elapsed, r.elapsed_s);
      const double w = r.elapsed_s > 0 ? r.wait_s / r.elapsed_s : 0;
      const double steady = r.elapsed_s - r.first_batch_s > 0
                                ? std::max(0.0, r.wait_s - r.first_batch_s) / (r.elapsed_s - r.first_batch_s)
                                : 0;
      wait_sum += w;
      steady_sum += steady;
      wait_max = std::max(wait_max, w);
      j["wait_ratio"] = w;
      j["batches"] = r.batches;
      j["elapsed_s"] = r.elapsed_s;
    }
    rows.push_back(std::move(j));
  }
  const double sps = elapsed > 0 ? samples / elapsed : 0;
  const double wait = receivers > 0 ? wait_sum / receivers : 0;
  // The wire's bytes per sample: samples a receiver prepared itself count at what they would
  // have cost (the same for every layout and lane split).
  const double per_sample =
      samples > 0 ? static_cast<double>(wire_bytes + local_bytes) / samples : 0;
  std::printf("stoker cluster: R=%d K=%d wire=%s: %.1f samples/s, trainer wait %.2f%%, wire %.0f "
              "B/sample; receivers prepared %llu of the samples themselves\n",
              s.receivers, s.workers, s.wire.c_str(), sps, 100 * wait, per_sample,
              static_cast<unsigned long long>(local_samples));
  std::fflush(stdout);
  if (json_path.empty()) return ok_status();
  nlohmann::json j = {{"receivers", s.receivers},
                      {"workers", s.workers},
                      {"wire", s.wire},
                      {"batch_size", s.batch_size},
                      {"step_ms", s.step_ms},
                      {"samples", samples},
                      {"batches", batches},
                      {"elapsed_s", elapsed},
                      {"samples_per_s", sps},
                      {"wait_ratio", wait},
                      {"wait_ratio_steady", receivers > 0 ? steady_sum / receivers : 0},
                      {"wait_ratio_max", wait_max},
                      {"wire_bytes", wire_bytes},
                      {"wire_bytes_per_sample", per_sample},
                      {"local_samples", local_samples},
                      {"local_bytes", local_bytes},
                      {"ranks", rows}};
  return write_text_file(json_path, j.dump(1) + "\n");
}

}  // namespace stoker::cluster
