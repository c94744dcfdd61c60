#!/usr/bin/env bash
# run-tests.sh [BUILD_DIR]: the aarch64 cross build and its tests under qemu (`make aarch64-test`,
# CI; docs/jetson.md). Default BUILD_DIR: build-a64 (the sysroot goes in BUILD_DIR/sysroot).
#
#   1. Sysroot: Debian's arm64 XNNPACK, pthreadpool, xxHash, GoogleTest (make-sysroot.sh).
#   2. Cross build (cmake/toolchains/aarch64-linux-gnu.cmake; cpu backend on, cuda and vulkan
#      off, -O2; the test programs' own code -O1) of what the tests below need, not the whole
#      tree.
#   3. ctest, every test binary run by qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR): the
#      unit tests of core, registry, executor, portable kernels, quantized formats and
#      C API (with its two examples), and the cpu backend's (its kernels against double
#      references, its conformance against the portable kernels, blob, weights, zero-alloc).
#   4. The op conformance suite (tests/ops, every family) against PyTorch on the host, with the
#      aarch64 `tern` (compile and run) under qemu.
#   5. One model end to end: torchvision's mobilenet_v2 exported on the host by tern_export,
#      compiled with backends portable and cpu by the aarch64 `tern`, run under qemu, compared
#      with PyTorch (max abs err <= 1e-4 * max |ref|, tests/models/run_model.py).
# Under qemu only correctness is measured, never speed. JOBS (default nproc) sets parallelism.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-build-a64}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
start=$(date +%s)
# The Python suites below run $jobs processes at once: one OpenMP thread each (PyTorch's
# default, one per core spinning while it waits, makes parallel processes fight over the cores).
export OMP_NUM_THREADS=1
step() { echo "== aarch64 [$(( $(date +%s) - start )) s]: $*"; }

for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  if ! command -v "$tool" > /dev/null; then
    echo "run-tests: $tool not found (scripts/install-deps.sh installs g++-aarch64-linux-gnu" \
         "and qemu-user-static)" >&2
    exit 1
  fi
done
python=
for py in /usr/bin/python3 "$root/.venv/bin/python"; do
  if [ -x "$py" ] && "$py" -c "import torch, torchvision, numpy" 2> /dev/null; then
    python=$py
    break
  fi
done
if [ -z "$python" ]; then
  echo "run-tests: no Python with torch, torchvision and numpy (scripts/install-deps.sh)" >&2
  exit 1
fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
sysroot=$build/sysroot
step "sysroot ($sysroot)"
bash scripts/aarch64/make-sysroot.sh "$sysroot"

step "configure"
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DTERN_AARCH64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DTERN_BACKEND_CPU=ON -DTERN_BACKEND_CUDA=OFF -DTERN_BACKEND_VULKAN=OFF \
  -DTERN_BUILD_TESTS=ON -DTERN_TEST_OPTIMIZATION=-O1 -DTERN_TEST_PER_PROGRAM=ON \
  > "$build/configure.log" ||
  { cat "$build/configure.log"; exit 1; }
grep -q "tern: cpu backend on" "$build/configure.log" || {
  cat "$build/configure.log"
  echo "run-tests: the cpu backend is off in the cross build" >&2
  exit 1
}

# The test binaries that run under qemu. Left out: the cli tests (they exec the aarch64 `tern`,
# which a qemu guest cannot start without binfmt_misc), the fuzz regressions and hardening runs
# (long, and target-independent), the compiler's unit tests (graph, partitioner, planner,
# serializer, safetensors, graph.json: host tooling whose aarch64 build the op suite below
# drives, `tern compile` on every case; left out since 2026-12-07 for CI time), and everything
# Python-driven (run below instead).
tests=(
  core_test registration_rule_test
  file_header_test data_loader_test program_test loader_contract_test method_test delegate_test
  zero_alloc_test end_to_end_test method_memory_test alloc_stress_test concurrency_test
  byte_flip_test bad_input_test
  portable_kernels_test reduction_kernels_test elementwise_kernels_test
  data_movement_kernels_test data_movement_alias_test linalg_kernels_test transformer_kernels_test
  quant_format_test quant_program_test quant_zero_alloc_test
  c_api_test tern_c_example tern_cpp_example
  cpu_conformance_test cpu_conformance_se_test cpu_conformance_cat_pool_test
  cpu_conformance_dense_test cpu_conformance_layernorm_test cpu_blob_test cpu_blob_lowering_test
  cpu_zero_alloc_test
  cpu_weights_test cpu_layout_test cpu_gemm_test cpu_conv_test cpu_winograd_test
  cpu_bottleneck_test cpu_quant_gemm_test cpu_quant_program_test cpu_strided_copy_test
  cpu_conformance_attention_test cpu_fused_attention_test cpu_conformance_fused_attention_test
  cpu_conformance_conv1d_test cpu_conformance_groupnorm_test cpu_conformance_reduce_cat_test
  cpu_conv3d_test cpu_conformance_conv3d_test cpu_resize_planes_test cpu_denormals_test
)
step "build (-j $jobs): tern and ${#tests[@]} test programs"
cmake --build "$build" -j "$jobs" --target tern "${tests[@]}" > "$build/build.log" 2>&1 || {
  tail -50 "$build/build.log"
  exit 1
}

# One ctest test per program (TERN_TEST_PER_PROGRAM: all its cases in one qemu process; one
# process per case spent two thirds of this step starting qemu), plus the two C API examples.
step "unit and cpu backend tests under qemu (ctest, one process per program)"
# Left out of the conv kernel tests under qemu: the 2-D and 3-D tiny-block sweeps (their K
# blocks of 5 and 37 floats; the tap-skipping sweeps cut K at 37 with tiny B blocks and many
# tasks too, through the same NEON microkernels: two fifths of those programs' qemu time).
programs=$(IFS='|'; echo "${tests[*]}")
GTEST_FILTER='-CpuConv.TinyBlocks*:CpuConv3d.TinyBlocks*' \
  ctest --test-dir "$build" -R "^($programs|c_api_example|cpp_module_example)\$" -j "$jobs" \
  --output-on-failure --timeout 900 > "$build/ctest.log" 2>&1 || status=$?
grep -E "tests passed|tests failed|\*\*\*(Failed|Timeout|Exception)" "$build/ctest.log" || true
if [ "${status:-0}" -ne 0 ]; then
  sed -n '/The following tests FAILED/,$p' "$build/ctest.log"
  exit 1
fi

# `tern` for the Python suites: the aarch64 binary under qemu.
tern_qemu=$build/tern-qemu
cat > "$tern_qemu" << EOF
#!/bin/sh
exec $(command -v qemu-aarch64-static) -L /usr/aarch64-linux-gnu \\
  -E LD_LIBRARY_PATH=$sysroot/usr/lib/aarch64-linux-gnu $build/tern "\$@"
EOF
chmod +x "$tern_qemu"

step "op conformance (tests/ops, every family) with the aarch64 tern, $python"
families=$(cd tests/ops && ls cases_*.py | sed 's/^cases_//; s/\.py$//')
mkdir -p "$build/ops"
# One family per process, $jobs at a time; each writes its own log.
echo "$families" | TERN="$tern_qemu" xargs -P "$jobs" -I{} sh -c \
  "'$python' tests/ops/run_ops.py {} > '$build/ops/{}.log' 2>&1; echo \$? > '$build/ops/{}.rc'"
ops_failed=0
for f in $families; do
  grep -E "FAIL|passed, [0-9]+ failed" "$build/ops/$f.log" || cat "$build/ops/$f.log"
  [ "$(cat "$build/ops/$f.rc")" = 0 ] || ops_failed=1
done
if [ "$ops_failed" -ne 0 ]; then
  echo "run-tests: op conformance failed under qemu" >&2
  exit 1
fi

step "mobilenet_v2 end to end (exported on the host, aarch64 tern under qemu, portable and cpu)"
TERN="$tern_qemu" "$python" tests/models/run_model.py mobilenet_v2 --samples 1

step "done"
