#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment .venv with the current PyTorch 2.x line
# and numpy from PyPI, for the exporter (torch.export) and the op/model tests. Debian's own
# python3-torch (the 1.13 line) stays under /usr/bin/python3, untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
want_torch="${TERN_TORCH_SPEC:-torch>=2.1}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  exit 0
fi
echo "setup-venv: creating $venv with $want_torch and numpy (PyPI)"
python3 -m venv "$venv" 2>/dev/null || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "$want_torch" numpy
"$venv/bin/python" -c "import torch; print('setup-venv: torch', torch.__version__)"
