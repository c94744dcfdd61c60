#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment .venv with the current PyTorch 2.x line
# and numpy from PyPI, for the exporter (torch.export) and the op/model tests. Debian's own
# python3-torch (the 1.13 line) stays under /usr/bin/python3, untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
want_torch="${TERN_TORCH_SPEC:-torch>=2.1}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  if "$venv/bin/python" -c "import torchvision" 2>/dev/null; then
    exit 0
  fi
  # torchvision (model tests, demo) matching the installed torch: pinning torch to the installed
  # version lets pip pick a compatible torchvision and never touch torch itself.
  have_torch=$("$venv/bin/python" -c "import torch; print(torch.__version__.split('+')[0])")
  echo "setup-venv: adding torchvision for torch $have_torch"
  if ! "$venv/bin/python" -m pip install -q torchvision pillow "torch==$have_torch"; then
    echo "setup-venv: no torchvision release declares torch $have_torch; installing the latest" \
         "without dependencies (its Python models work; its C++ ops may not)"
    "$venv/bin/python" -m pip install -q --no-deps torchvision
    "$venv/bin/python" -m pip install -q pillow
  fi
  exit 0
fi
echo "setup-venv: creating $venv with $want_torch, torchvision and numpy (PyPI)"
python3 -m venv "$venv" 2>/dev/null || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "$want_torch" torchvision pillow numpy
"$venv/bin/python" -c "import torch; print('setup-venv: torch', torch.__version__)"
