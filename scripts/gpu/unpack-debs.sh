#!/usr/bin/env bash
# Unpacks .deps-debs/*.deb (scripts/gpu/fetch-debs.sh) into a prefix without root or apt:
# `dpkg -x` when dpkg exists, else `ar` + `tar`. Prints the environment to use it:
#   eval "$(bash scripts/gpu/unpack-debs.sh [PREFIX])"
# sets PATH (flatc, pkg-config), CMAKE_PREFIX_PATH, PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR
# (the .pc files say prefix=/usr), and LD_LIBRARY_PATH. As root on a Debian-like system,
# `dpkg -i .deps-debs/*.deb` installs them properly instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=.deps-debs
prefix=$(realpath -m "${1:-.deps-prefix}")
if ! ls "$src"/*.deb >/dev/null 2>&1; then
  echo "unpack-debs: no .deb files in $src (run scripts/gpu/fetch-debs.sh where there is network)" >&2
  exit 1
fi
mkdir -p "$prefix"
for deb in "$src"/*.deb; do
  if command -v dpkg >/dev/null 2>&1; then
    dpkg -x "$deb" "$prefix"
  else
    tmp=$(mktemp -d)
    (cd "$tmp" && ar x "$(realpath "$OLDPWD/$deb")" && tar -xf data.tar.* -C "$prefix")
    rm -rf "$tmp"
  fi
done
multiarch=$(ls -d "$prefix"/usr/lib/*-linux-gnu 2>/dev/null | head -1)
# pkg-config is a link to pkgconf; make sure it resolves inside the prefix.
if [ -e "$prefix/usr/bin/pkgconf" ] && [ ! -e "$prefix/usr/bin/pkg-config" ]; then
  ln -sf pkgconf "$prefix/usr/bin/pkg-config"
fi
cat <<ENV
export PATH="$prefix/usr/bin:\$PATH"
export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export PKG_CONFIG_PATH="$multiarch/pkgconfig:$prefix/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
export LD_LIBRARY_PATH="$multiarch\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
ENV
