// stoker's version: the CMake project version (CMakeLists.txt `project(stoker VERSION ...)`),
// compiled into version.cc, so `stoker --version` and Python's `stoker.__version__` (which
// reads it from the extension) cannot disagree. Thread-safe, no allocation.
#pragma once

#include <string_view>

namespace stoker {

std::string_view version();

}  // namespace stoker
