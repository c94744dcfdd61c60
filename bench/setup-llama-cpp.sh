#!/usr/bin/env bash
# Optional peer for the language-model benchmarks (issue 15 item 5, issue 13 item 5): llama.cpp
# through llama-cpp-python, built from its PyPI source distribution (it vendors llama.cpp; PyPI
# has no binary wheel) into bench/.venv, CPU only, for the host's own ISA (GGML_NATIVE), plus the
# `gguf` package that writes the models. Nothing is downloaded at benchmark time: bench/
# llama_cpp_peer.py writes GGUF files from the same random-weight transformers model tern runs.
# Takes 10-20 minutes on two cores; not part of compare.sh's default setup.
set -uo pipefail
cd "$(dirname "$0")/.."
LLAMA_CPP_SPEC="${BENCH_LLAMA_CPP_SPEC:-llama-cpp-python==0.3.36}"
GGUF_SPEC="${BENCH_GGUF_SPEC:-gguf}"
log=bench/out/setup-llama-cpp.log
mkdir -p bench/out
bash bench/setup-venv.sh >/dev/null || { echo "setup-llama-cpp: bench/setup-venv.sh failed" >&2; exit 1; }
py=bench/.venv/bin/python
if "$py" -c "import llama_cpp, gguf" >/dev/null 2>&1; then
  echo "setup-llama-cpp: llama_cpp $("$py" -c 'import llama_cpp; print(llama_cpp.__version__)') already in bench/.venv"
  exit 0
fi
echo "setup-llama-cpp: building $LLAMA_CPP_SPEC from source (log: $log)"
CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  "$py" -m pip install --no-binary llama-cpp-python "$LLAMA_CPP_SPEC" "$GGUF_SPEC" >"$log" 2>&1 ||
  { echo "setup-llama-cpp: pip install failed (see $log)" >&2; tail -20 "$log" >&2; exit 1; }
"$py" -c "import llama_cpp, gguf; print('setup-llama-cpp: llama_cpp', llama_cpp.__version__)"
