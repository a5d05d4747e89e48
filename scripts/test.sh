#!/usr/bin/env bash
# The test command: set up, build the Release tree (build/) and the ASan/UBSan tree
# (build-asan/), run every test of both with ctest, and fuzz every parser for a few seconds
# (scripts/fuzz.sh: its own clang tree build-fuzz/). Ends with ctest's summary.
# STOKER_SKIP_ASAN=1 skips the sanitizer tree, STOKER_SKIP_FUZZ=1 the fuzzing (local iteration
# only; CI runs all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Seconds per stage, printed before the last ctest (whose own summary ends the run): CI's budget
# is 25 minutes on 2 cores, and this is where a regression of it shows first.
t_last=$(date +%s) times=""
stage_done() { local now; now=$(date +%s); times+="$1 $((now - t_last)) s; "; t_last=$now; }
"$root/scripts/setup.sh" --no-build
stage_done setup
jobs=$(nproc)

cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$root/build" -j"$jobs"
stage_done "release build"
status=0
if [ "${STOKER_SKIP_ASAN:-0}" != 1 ]; then
  # CI time: -O1 -g1 (line tables: reports keep function:line) builds in half of -O2 -g's time
  # (40 s vs 19 s for the largest test file), the tests run about as fast; test files at -O0
  # (CMakeLists.txt), and no benchmarks (this tree runs none).
  cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSTOKER_SANITIZE=ON \
    -DSTOKER_BUILD_BENCH=OFF >/dev/null
  ninja -C "$root/build-asan" -j"$jobs"
  stage_done "asan build"
  echo "== ASan/UBSan tree =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" -L 'unit|sanitize' --output-on-failure -j"$jobs" || status=1
  stage_done "asan tests"
fi
if [ "${STOKER_SKIP_FUZZ:-0}" != 1 ]; then
  # Every target STOKER_FUZZ_SECONDS (default 4) from the generated seeds, two at a time. The
  # whole step is bounded at ~3 min: the minimal clang tree (only the libraries the harnesses
  # link) costs ~260 s of CPU cold (~130 s on 2 cores), seeds ~5 s, the runs 15 × 4 s / 2
  # (src/stoker/fuzz/README.md). A finding fails the run; its input is in build-fuzz/fuzz/findings.
  echo "== fuzz (libFuzzer, ASan/UBSan) =="
  "$root/scripts/fuzz.sh" --seconds "${STOKER_FUZZ_SECONDS:-4}" --jobs "$jobs" || status=1
  stage_done fuzz
fi
echo "test.sh: stage times: ${times}the Release tree's tests follow (ctest's total below)"
echo "== Release tree =="
ctest --test-dir "$root/build" --output-on-failure -j"$jobs" || status=1
exit $status
