// `stoker bench scale`: the seed's scale-out experiment (issue 13) on the one-machine bed of
// scripts/cluster.sh. Every configuration is one `mpirun ... stoker cluster` job (the command's
// contract: ../../../bench/README.md, `stoker cluster --help`) on a bed built for it: host 0 is
// the GPU host (receiver rank + the simulated trainer, --step-ms), hosts 1.. are worker hosts,
// each with the same CPU share (a cgroup quota) and a NIC shaped with tc tbf. Packed = K workers
// on ONE host that has K slots and K x the share (the same CPU as K spread hosts, one NIC);
// spread = one worker on each of K hosts (--map-by node). Configurations: (a) the GPU host
// alone (zero workers: the receiver preprocesses on its own share); (b) K = 1, 2, 4 spread with
// the NICs unshaped (scaling); the trainer series K = 0..Kmax with a step that K workers can
// meet; (c) the NIC-bound set: K = Kmax packed vs spread, float vs uint8 wire (and the encoded
// wire), at a NIC rate set from the one-worker run (1.3x what one worker sends in float) unless
// --rate is given. Per configuration: samples/s (after the first batch), the trainer's wait
// ratio, wire bytes per sample, and per host CPU (cgroup usage) and NIC (bytes on its veth)
// utilisation. Every configuration's batch hashes are compared with the alone run's over their
// common batches (the layout must never change a byte): a difference prints MISMATCH, exit 1.
// Writes scale.csv and scale.png (bench/plot_scale.py) to `out`. Last line: `spread/pack: N`
// (samples/s, NIC-bound, float wire). Blocking; needs root, network namespaces and mpirun
// (else kSkipped with the reason). The bed is torn down after each configuration, on errors and
// on SIGINT/SIGTERM.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

inline constexpr char kScaleHelp[] = R"(usage: stoker bench scale [options]

Open MPI scale-out on a one-machine bed (scripts/cluster.sh: network namespaces as hosts, tc tbf
per NIC, a cgroup CPU quota per host): the GPU host alone vs + K worker hosts, packed vs spread,
float vs uint8 wire. Needs root, ip netns, tc and mpirun; exits 77 (skipped) without them.

options:
  --quick             small set, K = 1, 2, short runs (CI smoke, < 2 min on 2 cores)
  --workers LIST      worker host counts for the scaling runs (default 1,2,4; quick 1,2); the
                      largest is the NIC-bound set's K
  --cpu SHARE         CPU cores per host (default 0.2; quick 0.4: start-up, ~1 s of CPU per
                      rank, dominates short runs); a packed host gets K x SHARE
  --gpu-cpu SHARE     the GPU host's share (default: --cpu)
  --rate RATE         worker NIC rate in the NIC-bound set, tc units (default: 1.3 x one
                      worker's float output, measured)
  --step-ms MS        the trainer's step in the trainer series (default: demand = 0.75 x the
                      largest K's samples/s)
  --batch-size B      samples per batch (default 8)
  --seconds S         steady part of each run (its last 2/3 of batches; default 10, quick 2)
  --images N          photo-like JPEGs in the synthetic set, one per record (default 32;
                      quick 12); epochs cycle
  --size WxH          their size (default 3840x2160, quick 1920x1080: decode + resize
                      dominate the CPU per sample, so a worker's output stays a few MB/s at a
                      0.2-core share)
  --max-pixels P      the model folder's max_pixels (default 50176 = 224x224: 256 patches)
  --data PATH         your own JSONL instead (then --model/--tokenizer as for stoker run)
  --model M           model preset or folder (default: qwen2.5-vl with --max-pixels)
  --tokenizer DIR     tokenizer folder (default: the preset's bundled one)
  --prefix P          bed name prefix (default stkscale; interfaces P-br, P-h0, ...)
  --subnet A.B.C      the bed's private /24 (default 10.231.9)
  --stoker PATH       the stoker executable the ranks run (default: this one)
  --out DIR           scale.csv, scale.png, per-run logs (default ./scale-out)
)";

struct ScaleOptions {
  bool quick = false;
  std::string workers;          // "1,2,4"; empty: by --quick
  double cpu = -1, gpu_cpu = -1;  // -1: 0.2 (quick 0.4)
  std::string rate;             // empty: calibrated
  double step_ms = -1;          // -1: calibrated
  int batch_size = 8;
  double seconds = -1;          // -1: by --quick
  int images = 0;               // 0: by --quick
  int width = 0, height = 0;    // 0: by --quick
  std::string stoker;           // empty: this executable
  int max_pixels = 50176;
  std::string data, model, tokenizer;
  std::string prefix = "stkscale", subnet = "10.231.9";
  std::string out = "scale-out";
};

// kOk, kMismatch (batch hashes differ between layouts), kSkipped (no bed possible here).
Result<Outcome> run_scale_bench(const ScaleOptions& options);

}  // namespace stoker::bench
