#!/usr/bin/env bash
# One GPU session, end to end, for a machine with an NVIDIA GPU and the CUDA toolkit but
# possibly no Debian packages and no network (docs: backends/cuda/README.md, "GPU session").
#
#   OUT=/some/dir bash scripts/gpu-session.sh [--quick]
#
# 1. Build dependencies: uses the system's when present, else unpacks .deps-debs/*.deb (made
#    beforehand, with network, by scripts/gpu/fetch-debs.sh) into .deps-prefix/.
# 2. Configures build-gpu/ for this GPU's own architecture (nvidia-smi's compute capability;
#    CMake's "native" otherwise), cuda backend required, and builds.
# 3. Runs the cuda tests (ctest -R 'Cuda|cuda_': conformance in f32, f16 and bf16, device allocations,
#    fallback, blob, the models' partition counts), the vulkan tests on the NVIDIA driver's
#    Vulkan ICD when it and glslc are there, then the other C++ tests unless --quick,
#    then every model of docs/models.md (the zoo included) with --backend cuda against PyTorch,
#    plus the cuda+cpu, cuda:f16+cpu and cuda:bf16+cpu programs (and vulkan+cpu, vulkan:f16+cpu
#    with the vulkan backend; when a Python with torch is found), then `tern bench` of each of
#    those programs and the portable one.
# Every step logs to $OUT (default: ./gpu-out): env.txt, configure.log, build.log,
# cuda-tests.log (+ JUnit XML), vulkan-tests.log, other-tests.log, models.log, bench.log, summary.txt.
# A failing step is recorded and the script goes on; exit status 1 if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc 2>/dev/null || echo 8)
status=0
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() {  # step NAME LOG CMD...: runs CMD with its output in LOG, notes the outcome
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  if "$@" > "$log" 2>&1; then
    note "PASS $name ($((SECONDS - t0)) s) -> $log"
  else
    note "FAIL $name (exit $?, $((SECONDS - t0)) s) -> $log"
    status=1
  fi
}

export PATH="/usr/local/cuda/bin:$PATH"
{
  date -u
  uname -a
  nvidia-smi || echo "nvidia-smi failed"
  nvcc --version || echo "no nvcc"
  cmake --version | head -1
  c++ --version | head -1
} > "$OUT/env.txt" 2>&1

# 1. Dependencies.
if ! command -v flatc >/dev/null 2>&1 || ! [ -e /usr/include/xxhash.h ]; then
  if ls .deps-debs/*.deb >/dev/null 2>&1; then
    eval "$(bash scripts/gpu/unpack-debs.sh "$root/.deps-prefix")" || status=1
    note "deps: unpacked .deps-debs into .deps-prefix"
  else
    note "deps: system packages incomplete and no .deps-debs/ (run scripts/gpu/fetch-debs.sh first)"
  fi
else
  note "deps: system packages"
fi

# 2. Configure and build for this GPU.
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${TERN_CUDA_ARCHS:-${cap:-native}}
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1); building for CUDA architecture $arch"
# The vulkan backend too when glslc and the Vulkan headers are here (system or .deps-debs) and
# the NVIDIA driver installed its Vulkan ICD: its tests then run on the GPU through that driver
# (issue 12's NVIDIA half). Otherwise off (its tests would fail without a device).
nvidia_icd=""
for f in /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json; do
  [ -e "$f" ] && { nvidia_icd=$f; break; }
done
vulkan=OFF
if [ -n "$nvidia_icd" ] && command -v glslc >/dev/null 2>&1; then
  vulkan=ON
  note "vulkan: on, tests on the NVIDIA driver ($nvidia_icd)"
else
  note "vulkan: off (NVIDIA Vulkan ICD: ${nvidia_icd:-none}; glslc: $(command -v glslc || echo none))"
fi
cfg=(-S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTERN_BUILD_TESTS=ON -DTERN_BACKEND_CUDA=ON
     -DTERN_BACKEND_VULKAN=$vulkan -DTERN_VULKAN_TEST_ICD="$nvidia_icd"
     -DCMAKE_CUDA_ARCHITECTURES="$arch")
if ! cmake "${cfg[@]}" > "$OUT/configure.log" 2>&1; then
  # The unpacked XNNPACK may not link on another distribution: the cpu backend is optional.
  note "configure failed with the cpu backend; retrying with TERN_BACKEND_CPU=OFF"
  step configure "$OUT/configure.log" cmake "${cfg[@]}" -DTERN_BACKEND_CPU=OFF
else
  note "PASS configure -> $OUT/configure.log"
fi
step build "$OUT/build.log" cmake --build build-gpu -j "$jobs"

# 3. Tests.
# GoogleTest cases are registered one by one under their suite names (CudaConformanceTest...,
# Schemes/CudaQuantHost...): 'cuda_' alone would only match the scripted tests.
step cuda-tests "$OUT/cuda-tests.log" ctest --test-dir build-gpu -R 'Cuda|cuda_' --output-on-failure \
  -j 4 --output-junit "$OUT/cuda-tests.xml"
grep -E "tests passed|Skipped|Failed|\*\*\*" "$OUT/cuda-tests.log" | tail -20 >> "$summary"
if [ "$vulkan" = ON ]; then
  # Conformance (f32 and f16), blob, fallback, device option and zero-allocation tests on the
  # NVIDIA driver; the whole-model scripts need Debian's PyTorch 1.13 and skip without it.
  step vulkan-tests "$OUT/vulkan-tests.log" ctest --test-dir build-gpu -L vulkan -LE zoo \
    --output-on-failure -j 4 --output-junit "$OUT/vulkan-tests.xml"
  grep -E "tests passed|Skipped|Failed|\*\*\*" "$OUT/vulkan-tests.log" | tail -20 >> "$summary"
fi
if [ "$quick" -eq 0 ]; then
  step other-tests "$OUT/other-tests.log" ctest --test-dir build-gpu --output-on-failure -j "$jobs" \
    -E 'Cuda|cuda_|Vulkan|vulkan_|ops_|export_|model_|models_|hardening_model_'
fi
py=""
for candidate in "$root/.venv/bin/python" python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import torch, numpy" 2>/dev/null; then
    py=$candidate
    break
  fi
done
if [ -n "$py" ]; then
  export TERN="$root/build-gpu/tern"
  # run_models_cuda.py compiles and checks the vulkan programs too (on the NVIDIA driver).
  [ "$vulkan" = ON ] && export TERN_GPU_VULKAN=1 VK_ICD_FILENAMES="$nvidia_icd"
  models=()  # every model of tests/models/model_zoo.py
  [ "$quick" -eq 1 ] && models=(mlp gpt_block resnet18)
  step models "$OUT/models.log" "$py" scripts/gpu/run_models_cuda.py "$OUT/models" ${models[@]+"${models[@]}"}
  grep -E "PASS|FAIL|passed" "$OUT/models.log" >> "$summary"
  # Latency of each exported model: cuda delegate against the portable kernels.
  {
    for pte in "$OUT"/models/*/*_cuda.pte; do
      [ -e "$pte" ] || continue
      base=${pte%_cuda.pte}
      for p in "$pte" "${base}_cuda_f16_cpu.pte" "${base}_cuda_bf16_cpu.pte" \
               "${base}_vulkan_cpu.pte" "${base}_vulkan_f16_cpu.pte" "${base}_portable.pte"; do
        [ -e "$p" ] || continue
        echo "== $p"
        "$TERN" bench "$p" --iterations 50 --warmup 5 || echo "bench failed"
      done
    done
  } > "$OUT/bench.log" 2>&1
  note "bench -> $OUT/bench.log"
else
  note "models: skipped (no Python with torch and numpy)"
fi
note "done: exit $status"
exit "$status"
