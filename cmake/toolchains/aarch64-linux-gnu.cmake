# Cross build for aarch64 Linux (Jetson-style boards, docs/jetson.md) with Debian's
# g++-aarch64-linux-gnu. libc and libstdc++ come from the cross toolchain itself
# (/usr/aarch64-linux-gnu); the target's other libraries (XNNPACK, pthreadpool, xxHash, GoogleTest,
# FlatBuffers/CLI11/nlohmann-json headers) come from TERN_AARCH64_SYSROOT, a folder holding
# Debian's arm64 packages unpacked by scripts/aarch64/make-sysroot.sh. Programs that run during
# the build (flatc, python3) are the host's.
#
#   scripts/aarch64/make-sysroot.sh build-a64/sysroot
#   cmake -S . -B build-a64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DTERN_AARCH64_SYSROOT=$PWD/build-a64/sysroot
#
# Test binaries run under qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR, used by ctest and
# by gtest_discover_tests) when it is installed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(TERN_AARCH64_SYSROOT "" CACHE PATH
    "Debian arm64 packages unpacked by scripts/aarch64/make-sysroot.sh")
# The toolchain file is read again for every try_compile: pass the sysroot on to those.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TERN_AARCH64_SYSROOT)
if(NOT TERN_AARCH64_SYSROOT)
  message(FATAL_ERROR "aarch64 cross build: set -DTERN_AARCH64_SYSROOT=DIR "
                      "(made by scripts/aarch64/make-sysroot.sh DIR)")
endif()
set(_tern_target_libdir ${TERN_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu)

set(_tern_cross_prefix aarch64-linux-gnu-)
set(CMAKE_C_COMPILER ${_tern_cross_prefix}gcc)
set(CMAKE_CXX_COMPILER ${_tern_cross_prefix}g++)

# Not CMAKE_SYSROOT: that would hide the cross toolchain's own libc. Find libraries, headers and
# packages in the unpacked packages (and the cross toolchain), programs on the host.
set(CMAKE_FIND_ROOT_PATH ${TERN_AARCH64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (libxxhash) reads the target's .pc files, with their paths moved into the sysroot.
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR} "${_tern_target_libdir}/pkgconfig:${TERN_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${TERN_AARCH64_SYSROOT}")

# libXNNPACK.so needs libcpuinfo.so.0 and libpthreadpool.so.0, which no target links directly:
# tell the linker where they are.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_tern_target_libdir}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_tern_target_libdir}")

# Run target programs under qemu: the cross toolchain's libc as the guest's root for the dynamic
# loader, the sysroot's libraries on its search path (the build tree's RUNPATH names
# libXNNPACK.so's folder, but not for libXNNPACK's own dependencies).
find_program(TERN_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(TERN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TERN_QEMU_AARCH64} -L /usr/aarch64-linux-gnu
      -E LD_LIBRARY_PATH=${_tern_target_libdir})
endif()
