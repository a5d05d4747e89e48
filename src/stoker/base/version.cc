#include "stoker/base/version.h"

#ifndef STOKER_VERSION
#error "STOKER_VERSION comes from CMake's project version (src/stoker/base/CMakeLists.txt)"
#endif

namespace stoker {

std::string_view version() { return STOKER_VERSION; }

}  // namespace stoker
