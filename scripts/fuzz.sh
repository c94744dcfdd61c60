#!/usr/bin/env bash
# make fuzz / make fuzz-smoke: builds the libFuzzer targets of tests/fuzz with clang (ASan +
# UBSan) in build-fuzz/ and runs each for FUZZ_SECONDS seconds. Prints execs/s and total execs
# per target; exits non-zero when any target found something (crash inputs are kept in
# build-fuzz/fuzz-findings/<target>/; minimise one, then add it to tests/fuzz/regressions/).
#
# Environment: FUZZ_SECONDS (default 600), FUZZ_TARGETS (default: all eight, names without the
# fuzz_ prefix; cpu_blob / vulkan_blob exist only when the cpu / vulkan backend is built and
# are skipped otherwise; cuda_blob, host code, is always built),
# FUZZ_BUILD_DIR (default build-fuzz), JOBS (build parallelism and how many targets run at
# once, default nproc),
# TERN_TEST_OPTIMIZATION (e.g. -O1 in CI: the test programs' and harnesses' own code; the
# libraries keep -O2). Debug info is line tables only (-gline-tables-only): stack traces keep
# file:line, the build is quicker.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-600}
build=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
targets=${FUZZ_TARGETS:-"program_load method_load execute graph_json npy cpu_blob vulkan_blob cuda_blob"}

# Largest input per target: about twice the largest seed.
declare -A max_len=([program_load]=32768 [method_load]=32768 [execute]=4096
                    [graph_json]=65536 [npy]=4096 [cpu_blob]=16384 [vulkan_blob]=16384
                    [cuda_blob]=16384)

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  > "$probe/probe.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>/dev/null; then
  echo "fuzz: clang++ cannot link -fsanitize=fuzzer; install clang and libclang-rt-14-dev" \
       "(scripts/install-deps.sh does)" >&2
  exit 2
fi

mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FUZZ=ON -DTERN_BUILD_TESTS=ON \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DTERN_BACKEND_CUDA=OFF -DTERN_BACKEND_VULKAN=AUTO \
  "-DTERN_TEST_OPTIMIZATION=${TERN_TEST_OPTIMIZATION:-}" > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" --target tern_fuzz -j "$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target: writes its summary line to $build/fuzz-logs/<target>.log.summary (the status
# below is read from it) and returns non-zero on a finding.
run_target() {
  local t=$1 bin="$build/fuzz/fuzz_$t"
  local work="$build/fuzz-work/$t"        # grows across runs (seeds + what libFuzzer keeps)
  local findings="$build/fuzz-findings/$t"
  local log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  # Corpus folders: the working corpus, the generated seeds, and the checked-in regressions
  # (git keeps no empty folders, so a target without regressions has none).
  local dirs=("$work" "$build/fuzz-corpus/fuzz_$t")
  [ -d "tests/fuzz/regressions/fuzz_$t" ] && dirs+=("tests/fuzz/regressions/fuzz_$t")
  local rc=0
  "$bin" -max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/" "${dirs[@]}" > "$log" 2>&1 || rc=$?
  local execs rate cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$rc" -ne 0 ]; then
    echo "fuzz_$t: FINDING (exit $rc) after ${execs:-?} execs; see $log and $findings/" \
      > "$log.summary"
    grep -E 'ERROR: |runtime error:|fuzz finding:|SUMMARY:' "$log" | head -5 >&2 || true
    return 1
  fi
  echo "fuzz_$t: ok, ${execs:-?} execs, ${rate:-?} execs/s, ${cov:-cov: ?}" > "$log.summary"
}

# The targets run $jobs at a time (each libFuzzer process is single-threaded).
status=0
summary=()
ran=()
for t in $targets; do
  if [ ! -x "$build/fuzz/fuzz_$t" ]; then
    if [ "$t" = cpu_blob ] || [ "$t" = vulkan_blob ]; then  # only with that backend built
      summary+=("fuzz_$t: skipped (no ${t%_blob} backend in this build)")
      continue
    fi
    echo "fuzz: $build/fuzz/fuzz_$t was not built" >&2
    exit 1
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "== fuzz_$t for ${seconds}s (max_len ${max_len[$t]})"
  rm -f "$build/fuzz-logs/$t.log.summary"
  run_target "$t" &
  ran+=("$t")
done
wait || true
# The summaries decide (a job reaped by `wait -n` has no status left for a later `wait PID`).
for t in "${ran[@]}"; do
  line=$(cat "$build/fuzz-logs/$t.log.summary" 2> /dev/null ||
         echo "fuzz_$t: FAILED: no summary (the run did not finish)")
  case "$line" in *": ok,"*) ;; *) status=1 ;; esac
  summary+=("$line")
done
echo "== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit $status
