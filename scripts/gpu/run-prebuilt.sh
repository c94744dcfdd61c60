#!/usr/bin/env bash
# Runs a bundle made by scripts/gpu/bundle-prebuilt.sh on a GPU machine: the cuda tests, the
# models of docs/models.md against PyTorch (scripts/gpu/run_models_cuda.py), the cuda benchmark
# against PyTorch (bench/cuda_compare.py) and the vulkan tests on the NVIDIA driver. Each step
# has a time limit; logs go to $OUT (default ./gpu-out): summary.txt, env.txt, tests.log,
# models.log, bench.log, vulkan.log and results.tar.gz (everything else).
#
#   OUT=dir [MODELS="mlp gpt_block"] [BENCH_CASES="resnet18 gpt_block"] [STEPS="tests models bench vulkan"] \
#     bash scripts/gpu/run-prebuilt.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
STEPS=${STEPS:-tests models bench vulkan}
work=/tmp/tern-gpu
rm -rf "$work"
mkdir -p "$work/bundle" "$work/results"
tar -C "$work/bundle" -xJf .gpu-bundle/bundle.tar.xz
export LD_LIBRARY_PATH="$work/bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TERN="$work/bundle/bin/tern" PYTHONUNBUFFERED=1
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }

{
  date -u; uname -a; nvidia-smi; nvcc --version | tail -1
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
  ldd "$TERN"
} > "$OUT/env.txt" 2>&1
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader)"

if has tests; then
  : > "$OUT/tests.log"
  for t in "$work"/bundle/bin/cuda_*_test; do
    t0=$SECONDS
    timeout "${TEST_TIMEOUT:-60}" "$t" --gtest_brief=1 >> "$OUT/tests.log" 2>&1
    rc=$?
    note "$(basename "$t"): exit $rc ($((SECONDS - t0)) s); $(grep -c '^\[  FAILED  \]' "$OUT/tests.log") FAILED lines in tests.log so far"
  done
  grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$OUT/tests.log" | sort | uniq -c | sort -rn | head -40 >> "$summary"
fi

if has models; then
  t0=$SECONDS
  # MODEL_SHARDS=N: the list in N processes at once (the device has CPU cores to spare; the
  # portable reference programs run on them).
  read -r -a names <<< "${MODELS:-mlp gpt_block resnet18 mobilenet_v2 transformer_encoder_layer}"
  shards=${MODEL_SHARDS:-1}
  for ((k = 0; k < shards; k++)); do
    part=()
    for ((i = k; i < ${#names[@]}; i += shards)); do part+=("${names[i]}"); done
    timeout "${MODELS_TIMEOUT:-240}" python3 scripts/gpu/run_models_cuda.py \
      "$work/results/models$k" "${part[@]}" > "$work/results/models$k.log" 2>&1 &
  done
  wait
  cat "$work"/results/models*.log > "$OUT/models.log"
  note "models: $shards shard(s) ($((SECONDS - t0)) s)"
  grep -E 'PASS|FAIL|passed|skipped' "$OUT/models.log" | grep -v '^  ' >> "$summary"
fi

if has bench; then
  t0=$SECONDS
  # shellcheck disable=SC2086
  timeout "${BENCH_TIMEOUT:-200}" python3 bench/cuda_compare.py "$work/results/bench" ${BENCH_CASES:-} \
    > "$OUT/bench.log" 2>&1
  note "bench: exit $? ($((SECONDS - t0)) s)"
  cp "$work/results/bench/cuda_compare.md" "$OUT/" 2>/dev/null
fi

if has vulkan && ls "$work"/bundle/bin/vulkan_*_test > /dev/null 2>&1; then
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -e "$icd" ] || icd=$(ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -1)
  export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
  : > "$OUT/vulkan.log"
  for t in "$work"/bundle/bin/vulkan_*_test; do
    t0=$SECONDS
    timeout "${TEST_TIMEOUT:-60}" "$t" --gtest_brief=1 >> "$OUT/vulkan.log" 2>&1
    note "$(basename "$t"): exit $? ($((SECONDS - t0)) s)"
  done
  grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$OUT/vulkan.log" | grep -v 'FAILED  \] Ops' | sort | uniq -c | sort -rn | head -20 >> "$summary"
  echo "$(grep -c 'FAILED  \] Ops' "$OUT/vulkan.log") failed conformance cases" >> "$summary"
fi

find "$work/results" -name '*.pte' -delete
find "$work/results" -name '*.safetensors' -delete
tar -C "$work/results" -czf "$OUT/results.tar.gz" . 2>/dev/null
note "done"
