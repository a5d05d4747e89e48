// Scheduling class of the calling thread (Linux). A data loader shares the machine with the
// trainer it feeds, and the trainer's thread is the one whose latency counts: when it wakes
// from a GPU step and asks for the next batch it must get a core at once, not queue behind
// decode workers finishing their time slice. Measured on a 2-core machine (kernel 6.18, EEVDF):
// with the loader's threads in SCHED_OTHER the trainer thread spent 1–5 ms runnable-but-waiting
// inside next() on many steps (5–6 % of the step time in `stoker bench ladder --quick`);
// with SCHED_BATCH workers that wait is gone.
//   kNormal — SCHED_OTHER, the default for any thread.
//   kBatch  — SCHED_BATCH: same CPU share (same nice, same weight), but a waking batch thread
//             never preempts a running normal one; the loader's default.
//   kIdle   — SCHED_IDLE: runs only when nothing else wants the core. Strongest, but starves
//             when the node is busy with other work (spin-waiting trainer threads included).
// No privilege is needed for any of them. Elsewhere (non-Linux) kBatch/kIdle are Unimplemented.
#pragma once

#include <string_view>

#include "stoker/base/result.h"

namespace stoker::exec {

enum class SchedClass { kNormal, kBatch, kIdle };

std::string_view sched_class_name(SchedClass c);  // "normal", "batch", "idle"
// "normal" | "batch" | "idle"; anything else is InvalidArgument naming the accepted values.
Result<SchedClass> parse_sched_class(std::string_view name);

// Moves the calling thread (only it) to `c`. Internal with errno text if the kernel refuses.
Status set_current_thread_sched(SchedClass c);
// The calling thread's class; kNormal for policies this enum does not name (e.g. real-time).
SchedClass current_thread_sched();

}  // namespace stoker::exec
