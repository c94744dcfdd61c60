#!/usr/bin/env bash
# Creates (or reuses) the benchmark environment bench/.venv: the checkout's .venv (torch 2.x,
# torchvision; scripts/setup-venv.sh) seen through a .pth file, plus the peers from PyPI:
# onnx + onnxscript + onnxruntime, and executorch; and Ultralytics' models (ultralytics with
# OpenCV, for the yolo_* benchmark models and the coverage probe) and diffusers (the probe).
# Nothing is installed into the checkout's .venv. When executorch cannot live beside that
# torch, it gets its own bench/.venv-et (with the torch its wheel pins). A peer that fails to install is reported by compare.sh, not fatal here.
#
# Pins (override with the environment variables): executorch wheels pin the torch they were
# built against; 1.5.1 resolves against torch 2.15 without replacing it.
set -uo pipefail
cd "$(dirname "$0")/.."
ORT_SPEC="${BENCH_ORT_SPEC:-onnxruntime==1.31.1}"
ONNX_SPEC="${BENCH_ONNX_SPEC:-onnx==1.23.2}"
ONNXSCRIPT_SPEC="${BENCH_ONNXSCRIPT_SPEC:-onnxscript==0.7.2}"
ET_SPEC="${BENCH_ET_SPEC:-executorch==1.5.1}"
ULTRALYTICS_SPEC="${BENCH_ULTRALYTICS_SPEC:-ultralytics==8.4.190}"
OPENCV_SPEC="${BENCH_OPENCV_SPEC:-opencv-python-headless==5.1.0.95}"
DIFFUSERS_SPEC="${BENCH_DIFFUSERS_SPEC:-diffusers==0.42.1}"
venv=bench/.venv
venv_et=bench/.venv-et
log=bench/out/setup-venv.log
mkdir -p bench/out
: > "$log"

bash scripts/setup-venv.sh || { echo "bench/setup-venv: scripts/setup-venv.sh failed" >&2; exit 1; }
base=.venv

if [ ! -x "$venv/bin/python" ]; then
  echo "bench/setup-venv: creating $venv on top of $base"
  "$base/bin/python" -m venv "$venv" || exit 1
fi
# The base environment's packages (torch, torchvision, numpy) are visible in bench/.venv.
base_site=$("$base/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
base_plat=$("$base/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
printf '%s\n%s\n' "$(realpath "$base_site")" "$(realpath "$base_plat")" > "$site/_tern_base_venv.pth"

have() { "$1/bin/python" -c "import $2" >/dev/null 2>&1; }
install() {  # install VENV SPEC...: quiet pip install, logged; returns pip's status
  local v="$1"; shift
  echo "bench/setup-venv: $v: pip install $*"
  "$v/bin/python" -m pip install -q "$@" >>"$log" 2>&1
}

have "$venv" onnx || install "$venv" "$ONNX_SPEC" || echo "bench/setup-venv: onnx failed (see $log)"
have "$venv" onnxscript || install "$venv" "$ONNXSCRIPT_SPEC" || echo "bench/setup-venv: onnxscript failed (see $log)"
have "$venv" onnxruntime || install "$venv" "$ORT_SPEC" || echo "bench/setup-venv: onnxruntime failed (see $log)"
# Ultralytics' detectors (YOLOv5u/v8/v10/11, RT-DETR) for bench/models.py's yolo_* entries and
# tests/models/coverage_probe.py (run with bench/.venv/bin/python): the package without its
# training and plotting dependencies (it builds models from its configs with torch, numpy, yaml
# and OpenCV; nothing is downloaded).
have "$venv" ultralytics ||
  install "$venv" --no-deps "$ULTRALYTICS_SPEC" "$OPENCV_SPEC" ||
  echo "bench/setup-venv: ultralytics failed (see $log); the yolo_* models are skipped"
# diffusers' generative models (UNets, VAEs, DiTs) for the coverage probe's df_* entries
# (tests/models/probe_diffusers.py): built from tiny configs, nothing downloaded.
have "$venv" diffusers ||
  install "$venv" "$DIFFUSERS_SPEC" "torch==$("$venv/bin/python" -c "import torch; print(torch.__version__.split('+')[0])")" ||
  echo "bench/setup-venv: diffusers failed (see $log); the probe's df_* models are skipped"

if ! have "$venv" executorch.runtime && ! have "$venv_et" executorch.runtime; then
  # Refuse to replace the base torch: a resolution that wants another torch goes to .venv-et.
  torch_version=$("$venv/bin/python" -c "import torch; print(torch.__version__.split('+')[0])")
  if ! install "$venv" "$ET_SPEC" "torch==$torch_version"; then
    echo "bench/setup-venv: $ET_SPEC does not install beside torch $torch_version; trying $venv_et"
    [ -x "$venv_et/bin/python" ] || "$base/bin/python" -m venv "$venv_et"
    install "$venv_et" "$ET_SPEC" torchvision ||
      echo "bench/setup-venv: $ET_SPEC failed (see $log)"
  fi
fi
for v in "$venv" "$venv_et"; do
  [ -x "$v/bin/python" ] || continue
  "$v/bin/python" - <<'EOF'
import importlib, importlib.metadata, sys
found = []
for name in ("torch", "torchvision", "onnx", "onnxruntime", "executorch"):
    try:
        importlib.import_module(name)
        found.append("%s %s" % (name, importlib.metadata.version(name)))
    except Exception:  # noqa: BLE001 - report, never fail
        found.append("%s missing" % name)
print("bench/setup-venv: %s: %s" % (sys.prefix, ", ".join(found)))
EOF
done
exit 0
