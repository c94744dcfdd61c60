#!/usr/bin/env bash
# make-sysroot.sh DIR: unpacks Debian's arm64 packages of tern's target dependencies (XNNPACK,
# pthreadpool, cpuinfo, xxHash, GoogleTest, and the header-only FlatBuffers, CLI11 and
# nlohmann-json) into DIR, for the aarch64 cross build (cmake/toolchains/aarch64-linux-gnu.cmake,
# docs/jetson.md). libc and libstdc++ come from the cross toolchain (/usr/aarch64-linux-gnu).
#
# The arm64 packages cannot be co-installed with the amd64 ones, so they are fetched with
# `apt-get download` against a private apt state (its own package lists and an empty dpkg status,
# under DIR/.apt: the host's dpkg architectures and lists are left alone) and unpacked with
# `dpkg-deb -x`. Idempotent: a stamp holding the package list makes a second run a no-op; the
# downloaded .debs are kept in DIR/.apt/debs.
set -euo pipefail

sysroot=${1:?usage: make-sysroot.sh SYSROOT_DIR}
packages=(
  libxnnpack-dev libxnnpack0 libcpuinfo0
  libpthreadpool-dev libpthreadpool0
  libxxhash-dev libxxhash0
  libgtest-dev
  libflatbuffers-dev          # headers only (flatc runs on the host)
  libcli11-dev nlohmann-json3-dev
)

mkdir -p "$sysroot"
sysroot=$(cd "$sysroot" && pwd)
stamp="$sysroot/.tern-sysroot"
want="arm64: ${packages[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "make-sysroot: $sysroot is up to date"
  exit 0
fi

apt_dir="$sysroot/.apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
: > "$apt_dir/status"
apt_opts=(
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
  -o Dir::Cache="$apt_dir/cache" -o Debug::NoLocking=1
  -o APT::Sandbox::User=root -o Acquire::Languages=none
)
# Fresh lists every time the sysroot is (re)made, so the versions match the mirror's.
echo "make-sysroot: fetching the arm64 package lists"
apt-get "${apt_opts[@]}" -qq update
echo "make-sysroot: downloading ${packages[*]} (arm64)"
(cd "$apt_dir/debs" && rm -f ./*.deb && apt-get "${apt_opts[@]}" -qq download "${packages[@]}")
rm -rf "$sysroot/usr"
for deb in "$apt_dir/debs"/*.deb; do
  dpkg-deb -x "$deb" "$sysroot"
done
# Debian's -dev symlinks are relative, so they resolve inside the sysroot; check the ones the
# build links against.
for lib in libXNNPACK.so libpthreadpool.so libgtest.a libxxhash.so; do
  if [ ! -e "$sysroot/usr/lib/aarch64-linux-gnu/$lib" ]; then
    echo "make-sysroot: $lib missing from $sysroot/usr/lib/aarch64-linux-gnu" >&2
    exit 1
  fi
done
echo "$want" > "$stamp"
echo "make-sysroot: $sysroot ready ($(ls "$apt_dir/debs" | wc -l) packages)"
