// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_render(int argc, char** argv) { return report("render", unimplemented("not built yet")); }

}  // namespace stoker::cli
