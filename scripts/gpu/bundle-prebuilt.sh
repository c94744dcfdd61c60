#!/usr/bin/env bash
# Packs a GPU build made on this (Debian) machine into .gpu-bundle/bundle.tar.xz (git-ignored)
# for a GPU machine with no Debian packages: `tern`, the cuda and vulkan test binaries, and the
# shared libraries they need that a bare CUDA image lacks (XNNPACK, pthreadpool, cpuinfo,
# xxhash, the Vulkan loader). scripts/gpu/run-prebuilt.sh unpacks and runs it there. Cheaper in
# device time than building on the GPU machine (scripts/gpu-session.sh), which remains the way
# when the two machines' C libraries differ (the binaries need this machine's glibc or newer).
#
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTERN_BACKEND_CUDA=ON \
#         -DTERN_BACKEND_VULKAN=ON -DCMAKE_CUDA_ARCHITECTURES=90   # the GPU's architecture
#   cmake --build build-gpu --target tern cuda_conformance_test ...   # see TESTS below
#   bash scripts/gpu/bundle-prebuilt.sh [build-gpu]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
stage=.gpu-bundle/stage
rm -rf .gpu-bundle
mkdir -p "$stage/bin" "$stage/lib"
for t in tern "$build"/tests/backends/cuda/cuda_*_test "$build"/tests/backends/vulkan/vulkan_*_test; do
  [ "$t" = tern ] && t=$build/tern
  [ -x "$t" ] && cp "$t" "$stage/bin/"
done
# Libraries outside the C/C++ runtime and CUDA (those the GPU image has).
for b in "$stage"/bin/*; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux)[.-]' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# The Vulkan loader is opened at run time by the vulkan backend.
for l in /usr/lib/x86_64-linux-gnu/libvulkan.so.1; do [ -e "$l" ] && cp -L "$l" "$stage/lib/"; done
tar -C "$stage" -cJf .gpu-bundle/bundle.tar.xz .
rm -rf "$stage"
ls -la .gpu-bundle
