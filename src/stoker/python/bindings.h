// Internal to the _stoker extension: helpers shared by the in-process loader (module.cc) and the
// served mode (served.cc). Not a public header.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "stoker/base/result.h"
#include "stoker/config/settings.h"
#include "stoker/pipeline/loader.h"
#include "stoker/python/dlpack_export.h"

namespace stoker::python {

namespace py = pybind11;

// A stoker Error on its way to Python (module.cc registers the translator: the package's table).
struct ErrorException {
  Error error;
};

[[noreturn]] inline void raise(Error e) { throw ErrorException{std::move(e)}; }

template <typename T>
T unwrap(Result<T> r) {
  if (!r.ok()) raise(std::move(r).error());
  return std::move(r).value();
}
inline void check(Status s) {
  if (!s.ok()) raise(std::move(s).error());
}

// The steady clock ready_ns stamps are taken from.
std::int64_t monotonic_ns();

// For an interruptible wait with the GIL released: called about every 50 ms, it takes the GIL
// and runs Python's signal handlers (PyErr_CheckSignals); true when one raised (Ctrl-C →
// KeyboardInterrupt, now pending: throw py::error_already_set once the GIL is back).
bool python_signal_pending();
inline constexpr std::chrono::milliseconds kSignalPoll{50};

// Keyword options (checked by stoker/_options.py, again in config.cc: type and range before any
// narrowing) → Settings of Loader(...) (config::kPyLoader) or serve(...) (config::kPyServe),
// through the option schema: model folder parsed once, environment fallbacks, cross-checks.
config::Settings settings_from_keywords(const py::dict& kw, config::Command command);
pipeline::LoaderConfig loader_config(const py::dict& kw);  // Loader(...)'s
// The schema's Python options as dicts (name, kind, range on this machine, choices, defaults,
// help, env, ...): what stoker/_options.py builds its checks and the docstrings from.
py::list option_schema();
// An option's environment fallback read and checked by the schema (config::env_value), for the
// entries the package reads itself (server_uid ← $STOKER_SERVER_UID); None when unset.
py::object option_env(const std::string& name);

// (dict name → "dltensor" capsule, step, epoch, ready_ns): what RawLoader/RawClient.next return.
py::object batch_tuple(const std::shared_ptr<SharedBatch>& b, std::int64_t ready_ns);

// A state dict (state_dict(), load_state_dict, resume_state) → LoaderState, checked again here
// (InvalidArgument naming the key): module.cc's resume and served.cc's attach (its text).
pipeline::LoaderState state_from_dict(const py::dict& d);

void bind_served(py::module_& m);

}  // namespace stoker::python
