// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_tokenize(int argc, char** argv) { return report("tokenize", unimplemented("not built yet")); }

}  // namespace stoker::cli
