#!/usr/bin/env bash
# One command for the side-by-side benchmark (docs/BENCH.md): builds tern (Release), sets up the
# peers' environment (bench/setup-venv.sh), builds the raw XNNPACK baseline when
# libxnnpack-dev is installed, runs bench/compare.py and writes docs/BENCHMARKS.md.
#
# Environment (all optional):
#   BENCH_THREADS=2        threads for every runtime
#   BENCH_RUNS=30          timed runs per runtime and model (>= 20 for figures that count)
#   BENCH_WARMUP=5         warm-up runs
#   BENCH_ROUNDS=5         timing rounds: every runtime once per round, the order reversing
#   BENCH_MODELS=a,b       subset of bench/models.py's MODELS (default: all), e.g.
#                          resnet18,mobilenet_v2,vit_b_16,bert_base,gpt2
#   BENCH_PEERS=a,b        subset of tern-portable,tern-cpu,executorch,ort,torch
#   BENCH_PHASE=prepare    only export/compile every model for every peer (no timing; the
#                          machine need not be quiet), recorded in bench/out/prepared.json
#   BENCH_REUSE=a,b        peers whose artifacts from a BENCH_PHASE=prepare run are reused
#                          (e.g. executorch,ort: prepare them under load, time them quietly later)
#   BENCH_BUILD_DIR=build-bench
#   BENCH_NOTE="..."       a note printed at the top of the report (e.g. "the machine was loaded")
#   BENCH_REPORT=docs/BENCHMARKS.md
set -uo pipefail
cd "$(dirname "$0")/.."
build="${BENCH_BUILD_DIR:-build-bench}"
jobs=$(nproc 2>/dev/null || echo 2)

echo "compare: building tern (Release) in $build"
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTERN_BUILD_TESTS=OFF >"$build/compare-configure.log" 2>&1 ||
  { echo "compare: cmake failed (see $build/compare-configure.log)"; exit 1; }
cmake --build "$build" -j "$jobs" --target tern >"$build/compare-build.log" 2>&1 ||
  { echo "compare: building tern failed (see $build/compare-build.log)"; tail -20 "$build/compare-build.log"; exit 1; }
export TERN="$PWD/$build/tern"

xnnpack_fc=""
if [ -f /usr/include/xnnpack.h ] && [ -f /usr/include/pthreadpool.h ]; then
  mkdir -p "$build/bench"
  if c++ -O2 -std=c++17 bench/xnnpack_fc.cpp -o "$build/bench/xnnpack_fc" -lXNNPACK -lpthreadpool \
      2>"$build/bench/xnnpack_fc.log"; then
    xnnpack_fc="$PWD/$build/bench/xnnpack_fc"
  else
    echo "compare: bench/xnnpack_fc.cpp did not build (see $build/bench/xnnpack_fc.log); raw XNNPACK skipped"
  fi
else
  echo "compare: libxnnpack-dev / libpthreadpool-dev not installed; raw XNNPACK skipped"
fi

bash bench/setup-venv.sh || { echo "compare: bench/setup-venv.sh failed"; exit 1; }
py="$PWD/bench/.venv/bin/python"
et_py="$py"
if ! "$py" -c "import executorch.runtime" >/dev/null 2>&1 && [ -x bench/.venv-et/bin/python ]; then
  et_py="$PWD/bench/.venv-et/bin/python"
fi

cmdline="bench/compare.sh"
for v in BENCH_THREADS BENCH_RUNS BENCH_WARMUP BENCH_ROUNDS BENCH_MODELS BENCH_PEERS BENCH_REUSE; do
  [ -n "${!v:-}" ] && cmdline="$v=${!v} $cmdline"
done
exec "$py" bench/compare.py --et-python "$et_py" --xnnpack-fc "$xnnpack_fc" \
  --report "${BENCH_REPORT:-docs/BENCHMARKS.md}" --command "$cmdline"
