#!/usr/bin/env bash
# Creates (or completes) the project's virtual environment .venv with the current PyTorch 2.x
# line, torchvision, numpy, Hugging Face transformers, and the quantization references
# bitsandbytes and ml_dtypes from PyPI, for the exporter
# (torch.export) and the op/model tests. Debian's own python3-torch (the 1.13 line) stays under
# /usr/bin/python3, untouched. Idempotent: what is already there is kept; only what is missing
# is installed (and never a different torch than the one the venv has).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
want_torch="${TERN_TORCH_SPEC:-torch>=2.1}"
py="$venv/bin/python"
# No wheel cache: torch's CUDA wheels alone are ~4 GB and would be kept twice on a CI disk.
export PIP_NO_CACHE_DIR=1

if ! { [ -x "$py" ] && "$py" -c "import torch, numpy" 2>/dev/null; }; then
  echo "setup-venv: creating $venv with $want_torch, torchvision and numpy (PyPI)"
  python3 -m venv "$venv" 2>/dev/null || /usr/bin/python3 -m venv "$venv"
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q "$want_torch" torchvision pillow numpy
  "$py" -c "import torch; print('setup-venv: torch', torch.__version__)"
fi

# Pinning torch to the installed version lets pip pick compatible packages and never touch
# torch itself.
have_torch=$("$py" -c "import torch; print(torch.__version__.split('+')[0])")

if ! "$py" -c "import torchvision" 2>/dev/null; then
  # torchvision (model tests, demo) matching the installed torch.
  echo "setup-venv: adding torchvision for torch $have_torch"
  if ! "$py" -m pip install -q torchvision pillow "torch==$have_torch"; then
    echo "setup-venv: no torchvision release declares torch $have_torch; installing the latest" \
         "without dependencies (its Python models work; its C++ ops may not)"
    "$py" -m pip install -q --no-deps torchvision
    "$py" -m pip install -q pillow
  fi
fi

if ! "$py" -c "import transformers" 2>/dev/null; then
  # transformers (model tests: BERT, GPT-2 and ViT built from tiny random configs; nothing is
  # downloaded from the hub). Optional: without it those tests report "skipped".
  echo "setup-venv: adding transformers for torch $have_torch"
  if ! "$py" -m pip install -q transformers "torch==$have_torch"; then
    echo "setup-venv: warning: could not install transformers; the transformers model tests" \
         "will be skipped"
  fi
fi
if "$py" -c "import transformers" 2>/dev/null &&
   ! "$py" -c "import transformers, sys; sys.exit(not transformers.is_torch_available())" \
     2>/dev/null; then
  echo "setup-venv: note: this transformers release does not support torch $have_torch; the" \
       "transformers model tests will be skipped"
fi
if ! "$py" -c "import timm" 2>/dev/null; then
  # timm: the coverage probe's image models (tests/models/coverage_probe.py, run by hand;
  # random weights, nothing downloaded). Optional: without it the probe skips them.
  echo "setup-venv: adding timm for torch $have_torch"
  if ! "$py" -m pip install -q timm "torch==$have_torch"; then
    echo "setup-venv: warning: could not install timm; the probe's timm models are skipped"
  fi
fi
if ! "$py" -c "import ml_dtypes" 2>/dev/null; then
  # ml_dtypes: the float8_e4m3fn / float8_e5m2 reference of tests/quant (bit-exact FP8).
  echo "setup-venv: adding ml_dtypes"
  if ! "$py" -m pip install -q ml_dtypes; then
    echo "setup-venv: warning: could not install ml_dtypes; tests/quant reports it skipped"
  fi
fi
if ! "$py" -c "import bitsandbytes" 2>/dev/null; then
  # bitsandbytes: the NF4 reference of tests/quant (quantize_4bit(quant_type="nf4") on CPU,
  # double quantization, its dynamic map). Pinned to the installed torch so pip never replaces
  # it. Optional: without it tests/quant relies on its QUANT.md implementation and says so.
  echo "setup-venv: adding bitsandbytes for torch $have_torch"
  if ! "$py" -m pip install -q bitsandbytes "torch==$have_torch"; then
    echo "setup-venv: warning: could not install bitsandbytes; tests/quant reports it skipped"
  fi
fi
exit 0
