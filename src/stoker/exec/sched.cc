#include "stoker/exec/sched.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace stoker::exec {

std::string_view sched_class_name(SchedClass c) {
  switch (c) {
    case SchedClass::kNormal: return "normal";
    case SchedClass::kBatch: return "batch";
    case SchedClass::kIdle: return "idle";
  }
  return "normal";
}

Result<SchedClass> parse_sched_class(std::string_view name) {
  for (SchedClass c : {SchedClass::kNormal, SchedClass::kBatch, SchedClass::kIdle}) {
    if (name == sched_class_name(c)) return c;
  }
  return invalid_argument("scheduling class '" + std::string(name) +
                          "' is not one of normal, batch, idle");
}

#if defined(__linux__)
Status set_current_thread_sched(SchedClass c) {
  const int policy = c == SchedClass::kBatch ? SCHED_BATCH
                     : c == SchedClass::kIdle ? SCHED_IDLE
                                               : SCHED_OTHER;
  sched_param param{};
  // pid 0 = the calling thread (Linux scheduling attributes are per thread).
  if (sched_setscheduler(0, policy, &param) != 0) {
    return internal_error("sched_setscheduler(" + std::string(sched_class_name(c)) +
                          "): " + std::strerror(errno));
  }
  return ok_status();
}

SchedClass current_thread_sched() {
  switch (sched_getscheduler(0)) {
    case SCHED_BATCH: return SchedClass::kBatch;
    case SCHED_IDLE: return SchedClass::kIdle;
    default: return SchedClass::kNormal;
  }
}
#else
Status set_current_thread_sched(SchedClass c) {
  if (c == SchedClass::kNormal) return ok_status();
  return unimplemented("scheduling classes other than normal need Linux");
}
SchedClass current_thread_sched() { return SchedClass::kNormal; }
#endif

}  // namespace stoker::exec
