#!/usr/bin/env bash
# make demo: writes the bundled residual-MLP model, compiles it to a .pte, verifies and inspects
# it, runs it with `tern run`, and checks the output against a plain-Python reference.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
tern="$build/tern"
out="$build/demo"
rm -rf "$out"
mkdir -p "$out"

echo "== writing examples/mlp model to $out"
python3 "$here/mlp/make_mlp.py" "$out"
echo "== tern compile"
"$tern" compile "$out/graph.json" -o "$out/mlp.pte"
echo "== tern verify"
"$tern" verify "$out/mlp.pte"
echo "== tern inspect"
"$tern" inspect "$out/mlp.pte"
echo "== tern run"
"$tern" run "$out/mlp.pte" --input "$out/input.npy" --output-dir "$out/outputs"
echo "== compare with the Python reference"
python3 "$here/compare_npy.py" "$out/outputs/output_0.npy" "$out/expected.npy" 1e-5

# With PyTorch and torchvision available (the .venv's 2.x line, else Debian's 1.13): export
# torchvision's mobilenet_v2 with tern_export, run it with `tern run`, compare with PyTorch.
demo_python=
for py in "$here/../.venv/bin/python" /usr/bin/python3; do
  if [ -x "$py" ] && "$py" -c "import torch, torchvision" 2>/dev/null; then
    demo_python=$py
    break
  fi
done
if [ -n "$demo_python" ]; then
  echo "== tern_export: torchvision mobilenet_v2 (random weights, calibrated batch norm)"
  TERN="$tern" PYTHONPATH="$here/../tools/export" \
    "$demo_python" "$here/../tools/export/demo_mobilenet_v2.py" "$out"
else
  echo "== (no Python with torch and torchvision: skipping the mobilenet_v2 export demo)"
fi
