#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes (src/stoker/fuzz/README.md): builds stoker_fuzz with
# clang (ASan + UBSan + libFuzzer) in its own tree, makes the seed corpora, runs each target for
# N seconds, J targets at a time, and prints the executions per target. Exit 1 on any finding.
#   scripts/fuzz.sh [--seconds N] [--targets a,b,...] [--jobs J] [--build-dir DIR] [--build-only]
#     --seconds N   per target (default 60)        --jobs J   targets at once (default: nproc)
#     --targets     a comma list (default: all)    --build-dir  default build-fuzz
#     --build-only  configure and build stoker_fuzz, then stop (scripts/test.sh builds it early)
# Corpora grow in DIR/fuzz/corpus/T (kept between runs), seeds are remade in DIR/fuzz/seeds/T
# (from build/stoker when it exists: synth seeds), findings land in DIR/fuzz/findings/T
# (crash-*, leak-*, timeout-*, oom-*; an earlier run's are moved to DIR/fuzz/findings-earlier),
# each target's log in DIR/fuzz/logs/T.log.
# Reproduce a finding: DIR/stoker_fuzz --target=T DIR/fuzz/findings/T/crash-...
# The machine is shared? Run it under `nice -n 15`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=60 jobs=$(nproc) targets="" build="$root/build-fuzz" build_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

t0=$(date +%s)
# -O1 -g1 as the sanitizer tree; no tests or benchmarks: `ninja stoker_fuzz` then builds only
# the libraries the harnesses link.
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSTOKER_FUZZ=ON \
    -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_BENCH=OFF ${STOKER_FUZZ_CMAKE_ARGS:-} >/dev/null
fi
ninja -C "$build" -j"$jobs" stoker_fuzz
[ "$build_only" = 0 ] || exit 0
t_built=$(date +%s)
fuzz="$build/stoker_fuzz"
work="$build/fuzz"
[ -n "$targets" ] || targets=$("$fuzz" --list | awk '{print $1}' | paste -sd, -)

rm -rf "$work/seeds"
/usr/bin/python3 "$root/src/stoker/fuzz/make_seeds.py" --fuzz "$fuzz" --out "$work/seeds" \
  --stoker "$root/build/stoker" | grep -v ': [0-9]* seeds$' || true
mkdir -p "$work/logs"

run_one() {
  local t=$1
  # Findings are this run's: an earlier run's (fixed since, or not) are moved aside, not re-reported.
  if [ -n "$(ls -A "$work/findings/$t" 2>/dev/null)" ]; then
    mkdir -p "$work/findings-earlier" && mv "$work/findings/$t" "$work/findings-earlier/$t.$(date +%s)"
  fi
  mkdir -p "$work/corpus/$t" "$work/findings/$t" "$work/seeds/$t"
  # -timeout: one input over 30 s is a hang (generous: the machine may be shared);
  # -rss_limit_mb: 2 GiB is an OOM finding, and so is one allocation over 512 MiB.
  # Leaks inside third-party libraries' own failure paths: src/stoker/fuzz/lsan.supp.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS=suppressions="$root/src/stoker/fuzz/lsan.supp" \
    "$fuzz" --target="$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 -artifact_prefix="$work/findings/$t/" \
    "$work/corpus/$t" "$work/seeds/$t" >"$work/logs/$t.log" 2>&1 || true
}

IFS=, read -ra list <<<"$targets"
running=0
for t in "${list[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  run_one "$t" &
  running=$((running + 1))
done
wait

status=0 total=0
printf '%-15s %12s %9s %7s  %s\n' target executions exec/s corpus result
for t in "${list[@]}"; do
  log="$work/logs/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  units=$(find "$work/corpus/$t" -type f | wc -l)
  # slow-unit-* are informational (an input over 10 s, e.g. while the machine was starved).
  found=$(find "$work/findings/$t" -type f ! -name 'slow-unit-*' | head -1)
  result=ok
  if [ -n "$found" ] || [ -z "$execs" ]; then
    result="FINDING: ${found:-no final stats, see $log}"
    status=1
  fi
  total=$((total + ${execs:-0}))
  printf '%-15s %12s %9s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result"
done
t_end=$(date +%s)
echo "fuzz: $total executions in total; build $((t_built - t0)) s, seeds + runs $((t_end - t_built)) s"
exit $status
