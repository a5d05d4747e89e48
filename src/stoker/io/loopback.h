// A loopback TCP port that was free a moment ago (bound to port 0, read back, closed): for tests
// and benchmarks that start local servers (s3rver, nginx) or need a port where nothing listens.
// Racy by nature — another process may take it — which is fine on a test machine. -1 on failure.
#pragma once

namespace stoker::io {

int unused_loopback_port();

}  // namespace stoker::io
