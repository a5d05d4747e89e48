#!/usr/bin/env bash
# The test command: set up, build the Release tree (build/) and the ASan/UBSan tree
# (build-asan/), run every test of both with ctest, and fuzz every parser for a few seconds
# (scripts/fuzz.sh: its own clang tree build-fuzz/). Ends with ctest's summary.
# STOKER_SKIP_ASAN=1 skips the sanitizer tree, STOKER_SKIP_FUZZ=1 the fuzzing (local iteration
# only; CI runs all).
#
# --quick: the developers' loop (README "Tests"): the Release tree built incrementally, its unit
# tier and one smoke per integration group (QUICK below), no sanitizer or fuzz tree, no setup
# step. ≤ 6 minutes on a warm build tree of the 2-core dev VM.
#
# Order, for CI's budget (25 minutes on 2 cores): the Release tree is built, then its tests run
# while the sanitizer and fuzz trees build behind them at nice 19 — the tests leave ~20% of the
# CPU idle (measured: 884 CPU-s in 559 s on 2 cores), and a nice-19 compiler takes only what
# they leave (weight 15 against 1024) — then the fuzz step, then the sanitizer tree's tests,
# whose summary ends the run. The Release tree skips the `asan-enough` tests (tests/CMakeLists.txt)
# when the sanitizer tree runs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# One smoke per integration group: tokenizer (parity + CLI), chat templates, the Jinja engine
# against Python jinja2 (jinja_parity), images (EXIF parity against Pillow), the CLI's options,
# `stoker run`'s summary, special files, video bad inputs, audio bad inputs, shared memory (ladder
# smoke), S3/HTTP (io_net), security (the manifest cache attack, log injection), the Python API,
# the cluster. Record sources (WebDataset, Energon, synth --shards) are unit tests: the unit tier.
QUICK='^(tokenizer_parity_qwen2_5|tokenize_cli|render_cli|jinja_parity|image_exif_parity|cli_options|run_summary|special_files|video_bad_inputs|audio_bad_inputs|shm_ladder_smoke|io_net|cache_attack|log_injection|python_api_smoke|cluster_smoke)$'
if [ "${1:-}" = "--quick" ]; then
  t0=$(date +%s)
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$root/build" -j"$(nproc)"
  t1=$(date +%s)
  status=0
  ctest --test-dir "$root/build" --output-on-failure -j"$(nproc)" -L unit || status=1
  t2=$(date +%s)
  ctest --test-dir "$root/build" --output-on-failure -j"$(nproc)" -R "$QUICK" || status=1
  t3=$(date +%s)
  echo "test.sh --quick: build $((t1 - t0)) s, unit tier $((t2 - t1)) s, smokes $((t3 - t2)) s, total $((t3 - t0)) s"
  exit $status
fi
# Seconds per stage, printed before the last ctest (whose own summary ends the run): CI's budget
# is 25 minutes on 2 cores, and this is where a regression of it shows first.
t_last=$(date +%s) times=""
stage_done() { local now; now=$(date +%s); times+="$1 $((now - t_last)) s; "; t_last=$now; }
"$root/scripts/setup.sh" --no-build
stage_done setup
jobs=$(nproc)
asan=1 fuzz=1
[ "${STOKER_SKIP_ASAN:-0}" != 1 ] || asan=0
[ "${STOKER_SKIP_FUZZ:-0}" != 1 ] || fuzz=0

cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$root/build" -j"$jobs"
stage_done "release build"
status=0

# The trees behind the Release tests. CI time: -O1 -g1 (line tables: reports keep
# function:line) builds in half of -O2 -g's time, test files at -O0 (CMakeLists.txt), and no
# benchmarks (this tree runs none). The fuzz tree: only the libraries the harnesses link.
behind_log="$root/build-behind.log"
behind_pid=""
if [ "$asan" = 1 ] || [ "$fuzz" = 1 ]; then
  if [ "$asan" = 1 ]; then
    cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSTOKER_SANITIZE=ON \
      -DSTOKER_BUILD_BENCH=OFF >/dev/null
  fi
  (
    set -e
    if [ "$asan" = 1 ]; then nice -n 19 ninja -C "$root/build-asan" -j"$jobs"; fi
    if [ "$fuzz" = 1 ]; then nice -n 19 "$root/scripts/fuzz.sh" --build-only --jobs "$jobs"; fi
  ) >"$behind_log" 2>&1 &
  behind_pid=$!
fi

release_tests() {
  echo "== Release tree =="
  # `smoke`: the quick tier's own entries repeat cases the full suites run (python_api_smoke,
  # cluster_smoke).
  local filter=(-LE smoke)
  [ "$asan" = 0 ] || filter=(-LE 'asan-enough|smoke')
  ctest --test-dir "$root/build" --output-on-failure -j"$jobs" "${filter[@]}" || status=1
  stage_done "release tests"
}
# Without the sanitizer tree the Release tests come last (their summary ends the run).
[ "$asan" = 0 ] || release_tests

if [ -n "$behind_pid" ]; then
  if ! wait "$behind_pid"; then
    echo "test.sh: building the sanitizer/fuzz trees failed:" >&2
    tail -n 60 "$behind_log" >&2
    exit 1
  fi
  stage_done "sanitizer and fuzz builds (the rest after the Release tests)"
fi
if [ "$fuzz" = 1 ]; then
  # Every target STOKER_FUZZ_SECONDS (default 4) from the generated seeds, two at a time. A
  # finding fails the run; its input is in build-fuzz/fuzz/findings (src/stoker/fuzz/README.md).
  echo "== fuzz (libFuzzer, ASan/UBSan) =="
  "$root/scripts/fuzz.sh" --seconds "${STOKER_FUZZ_SECONDS:-4}" --jobs "$jobs" || status=1
  stage_done fuzz
fi
if [ "$asan" = 1 ]; then
  echo "test.sh: stage times: ${times}the sanitizer tree's tests follow (ctest's total below)"
  [ "$status" = 0 ] || echo "test.sh: FAILED before the sanitizer tree's tests (see above)"
  echo "== ASan/UBSan tree =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" -L 'unit|sanitize' --output-on-failure -j"$jobs" || status=1
else
  echo "test.sh: stage times before the Release tests: ${times}"
  release_tests
fi
exit $status
