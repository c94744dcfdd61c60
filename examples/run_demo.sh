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
