#!/usr/bin/env bash
# Installs the Debian packages that tern's build, tests and demo need, if any is missing.
# Root: apt-get directly; otherwise through sudo. Safe to run repeatedly (no-op when complete).
set -euo pipefail

packages=(
  cmake make g++ pkg-config python3
  libflatbuffers-dev flatbuffers-compiler   # program format
  libxxhash-dev                             # checksums
  libcli11-dev                              # CLI parsing
  nlohmann-json3-dev                        # graph.json / safetensors headers
  libgtest-dev                              # tests
  libxnnpack-dev libpthreadpool-dev         # cpu backend (XNNPACK delegate)
  libvulkan-dev glslc                       # vulkan backend: headers + loader, GLSL -> SPIR-V
  mesa-vulkan-drivers                       # lavapipe: the CPU Vulkan device the vulkan tests run on
  clang libclang-rt-14-dev                  # make fuzz: libFuzzer, ASan, UBSan
  python3-venv                              # scripts/setup-venv.sh
  python3-numpy python3-torch               # the PyTorch 1.13 line: op tests, exporter (make_fx)
  python3-torchvision                       # model tests (tests/models) and the demo's mobilenet_v2
  g++-aarch64-linux-gnu qemu-user-static    # make aarch64-test: cross build, tests under qemu
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
else
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
