#!/usr/bin/env bash
# Downloads (here, with network) the Debian packages tern's build needs, with their library
# dependencies, as .deb files into .deps-debs/ (git-ignored), so that they travel with the tree
# to a GPU machine that has CUDA, CMake and a C++ compiler but no Debian packages and no network.
# scripts/gpu-session.sh unpacks them there (dpkg -x into .deps-prefix/, no root needed).
#
#   bash scripts/gpu/fetch-debs.sh            download what is missing (~10 MB)
#   bash scripts/gpu/fetch-debs.sh --dry-run  list the packages only
#
# The list is scripts/install-deps.sh's build dependencies (flatbuffers, xxhash, CLI11,
# nlohmann-json, GoogleTest, XNNPACK, pthreadpool) plus pkg-config, and the Vulkan loader,
# headers and glslc (the vulkan backend, run there on the NVIDIA driver's Vulkan ICD), closed
# over their dependencies minus the base system (libc6, libstdc++6, libgcc-s1, gcc-12-base).
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.deps-debs
wanted=(libflatbuffers-dev flatbuffers-compiler libxxhash-dev libcli11-dev nlohmann-json3-dev
        libgtest-dev libxnnpack-dev libpthreadpool-dev pkg-config libvulkan1 glslc)
# Added without their dependencies: libvulkan-dev (headers; its only other dependency is python3
# for a helper script the build does not run).
extra=(libvulkan-dev)
base='^(libc6|libstdc\+\+6|libgcc-s1|gcc-12-base|libc-bin|debconf|dpkg|perl-base|tar|libcrypt1)$'

closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
            --no-replaces --no-enhances "${wanted[@]}" 2>/dev/null |
          grep -v '^ ' | grep -v '^<' | sort -u | grep -Ev "$base")
closure=$(printf '%s\n' $closure "${extra[@]}" | sort -u)
echo "fetch-debs: $(echo "$closure" | wc -l) packages: $(echo $closure)"
if [ "${1:-}" = "--dry-run" ]; then
  exit 0
fi
mkdir -p "$dest"
cd "$dest"
for p in $closure; do
  if ls "${p}"_*.deb >/dev/null 2>&1; then continue; fi
  apt-get download "$p"
done
ls -1 *.deb > MANIFEST
echo "fetch-debs: $(wc -l < MANIFEST) .deb files in $dest ($(du -sh . | cut -f1))"
