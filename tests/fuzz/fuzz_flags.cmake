# TERN_FUZZ (tests/fuzz, f1): instruments the whole build for libFuzzer with ASan and UBSan.
# Included from the top-level CMakeLists.txt before any target is defined. The fuzz targets
# themselves (tests/fuzz/CMakeLists.txt) link -fsanitize=fuzzer; everything else links the
# sanitizer runtimes only. vptr is off: the runtime is built without RTTI.
option(TERN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only; implies ASan+UBSan)" OFF)
if(TERN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TERN_FUZZ needs clang (configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang); found ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(TERN_SANITIZE)
    message(FATAL_ERROR "TERN_FUZZ already enables address and undefined; leave TERN_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr
                      -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize=vptr)
  message(STATUS "tern: fuzz build (libFuzzer + ASan + UBSan)")
endif()
