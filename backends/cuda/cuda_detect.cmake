# Detection of the CUDA toolchain for the cuda backend (backends/cuda), included from the
# top-level CMakeLists.txt: enable_language(CUDA) must run in the top directory, which every
# target linking the cuda libraries descends from.
#
# TERN_BACKEND_CUDA: AUTO (on when nvcc and the CUDA toolkit with cuBLASLt are found), ON
# (required: a configure error otherwise), OFF. Sets TERN_CUDA_ENABLED.
# CMAKE_CUDA_ARCHITECTURES defaults to 80;87;89;90 (A100, Jetson Orin, Ada, Hopper); narrow it
# with -DCMAKE_CUDA_ARCHITECTURES=80, or the CUDAARCHS environment variable (CMake's own), e.g.
# CI builds one architecture.
set(TERN_CUDA_ENABLED OFF)
string(TOUPPER "${TERN_BACKEND_CUDA}" _tern_cuda_mode)
if(_tern_cuda_mode MATCHES "^(OFF|FALSE|0|NO)$")
  message(STATUS "tern: cuda backend off (TERN_BACKEND_CUDA=OFF)")
  return()
endif()
set(_tern_cuda_required OFF)
if(NOT _tern_cuda_mode STREQUAL "AUTO")
  set(_tern_cuda_required ON)
endif()
if(TERN_MINIMAL)
  return()
endif()
if(TERN_FUZZ AND NOT _tern_cuda_required)
  message(STATUS "tern: fuzz build: cuda backend off (TERN_BACKEND_CUDA=ON to build it)")
  return()
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(_tern_cuda_required)
    message(FATAL_ERROR "tern: TERN_BACKEND_CUDA=${TERN_BACKEND_CUDA} but no CUDA compiler (nvcc) was found")
  endif()
  message(STATUS "tern: no CUDA compiler (nvcc) found: cuda backend off")
  return()
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::cudart_static)
  if(_tern_cuda_required)
    message(FATAL_ERROR "tern: TERN_BACKEND_CUDA=${TERN_BACKEND_CUDA} but the CUDA toolkit (cudart, cuBLASLt) was not found")
  endif()
  message(STATUS "tern: the CUDA toolkit (cudart, cuBLASLt) was not found: cuda backend off")
  return()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES "80;87;89;90" CACHE STRING "CUDA architectures to build")
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(TERN_CUDA_ENABLED ON)
message(STATUS "tern: cuda backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, CUDA architectures "
               "${CMAKE_CUDA_ARCHITECTURES})")
