# tern as a package: the umbrella targets users link (tern::runtime, tern::portable_kernels)
# and the install rules (`cmake --install`): headers, static libraries, libtern.so (the C API),
# the `tern` CLI, the CMake package (find_package(tern CONFIG)) and tern.pc (pkg-config).
# docs/embedding.md describes what is installed and how to use it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# ---- umbrella targets (the same names in the build tree and in the installed package) ----
add_library(tern_runtime INTERFACE)
target_link_libraries(tern_runtime INTERFACE tern::module tern::executor tern::loader
                      tern::backend tern::kernel_registry tern::core)
set_target_properties(tern_runtime PROPERTIES EXPORT_NAME runtime)
add_library(tern::runtime ALIAS tern_runtime)
add_library(tern_portable_kernels INTERFACE)
target_link_libraries(tern_portable_kernels INTERFACE tern::kernels)
set_target_properties(tern_portable_kernels PROPERTIES EXPORT_NAME portable_kernels)
add_library(tern::portable_kernels ALIAS tern_portable_kernels)

set(TERN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tern)
set(TERN_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tern)  # C++ headers, repository paths

# Every tern library `target` links, directly or through other tern libraries (static
# archives need all of them exported). Appends to the list variable named `out`.
function(_tern_collect_libraries target out)
  set(_found ${${out}})
  get_target_property(_aliased ${target} ALIASED_TARGET)
  if(_aliased)
    set(target ${_aliased})
  endif()
  if(target IN_LIST _found)
    return()
  endif()
  list(APPEND _found ${target})
  get_target_property(_type ${target} TYPE)
  set(_links)
  foreach(_property INTERFACE_LINK_LIBRARIES LINK_LIBRARIES)
    if(_property STREQUAL "LINK_LIBRARIES" AND _type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    get_target_property(_l ${target} ${_property})
    if(_l)
      list(APPEND _links ${_l})
    endif()
  endforeach()
  foreach(_link IN LISTS _links)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _link "${_link}")
    if(TARGET ${_link})
      get_target_property(_imported ${_link} IMPORTED)
      if(NOT _imported)
        _tern_collect_libraries(${_link} _found)
      endif()
    endif()
  endforeach()
  set(${out} ${_found} PARENT_SCOPE)
endfunction()

# Include directories for installation: what the build tree uses becomes build-only, and the
# installed headers' root is added (targets set PUBLIC ${PROJECT_SOURCE_DIR}, which an
# exported target must not carry).
function(_tern_installable_include_dirs target)
  get_target_property(_dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(_new)
  if(_dirs)
    foreach(_d IN LISTS _dirs)
      if(_d MATCHES "^\\$<")
        list(APPEND _new "${_d}")
      else()
        list(APPEND _new "$<BUILD_INTERFACE:${_d}>")
      endif()
    endforeach()
  endif()
  if(NOT target MATCHES "^tern_(c|shared)$")
    list(APPEND _new "$<INSTALL_INTERFACE:${TERN_INSTALL_INCLUDEDIR}>")
  endif()
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new}")
  get_target_property(_system ${target} INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
  if(_system)
    set(_new_system)
    foreach(_d IN LISTS _system)
      if(_d MATCHES "^\\$<")
        list(APPEND _new_system "${_d}")
      else()
        list(APPEND _new_system "$<BUILD_INTERFACE:${_d}>")
      endif()
    endforeach()
    set_target_properties(${target} PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                                               "${_new_system}")
  endif()
endfunction()

# Runs at the end of the top-level configure (after register_all_backends() has linked every
# backend), when the set of libraries is final.
function(tern_install_rules)
  set(_libraries)
  foreach(_root tern_c tern_shared tern_runtime tern_portable_kernels tern_all_backends)
    _tern_collect_libraries(${_root} _libraries)
  endforeach()
  get_property(_backend_libraries GLOBAL PROPERTY TERN_BACKEND_LIBRARIES)
  foreach(_lib IN LISTS _backend_libraries)
    if(TARGET ${_lib})
      _tern_collect_libraries(${_lib} _libraries)
    endif()
  endforeach()
  foreach(_lib IN LISTS _libraries)
    _tern_installable_include_dirs(${_lib})
    get_target_property(_export_name ${_lib} EXPORT_NAME)
    if(NOT _export_name)
      string(REGEX REPLACE "^tern_" "" _export_name ${_lib})  # tern_core -> tern::core
      set_target_properties(${_lib} PROPERTIES EXPORT_NAME ${_export_name})
    endif()
  endforeach()
  string(REPLACE ";" " " _listed "${_libraries}")
  message(STATUS "tern: cmake --install exports ${_listed}")

  install(TARGETS ${_libraries} EXPORT ternTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT ternTargets NAMESPACE tern:: DESTINATION ${TERN_INSTALL_CMAKEDIR})
  if(TARGET tern)
    install(TARGETS tern RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()

  # Headers: the C API as <tern.h>; the C++ runtime under include/tern/ with the paths the
  # headers use ("runtime/core/error.h"). Internal headers that need the FlatBuffers schema
  # (or the C API's handles) stay out.
  install(FILES ${PROJECT_SOURCE_DIR}/runtime/c/tern.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/ DESTINATION ${TERN_INSTALL_INCLUDEDIR}/runtime
          FILES_MATCHING PATTERN "*.h"
          PATTERN "c" EXCLUDE
          PATTERN "method_layout.h" EXCLUDE
          PATTERN "method_load_context.h" EXCLUDE)
  get_property(_backends GLOBAL PROPERTY TERN_BACKENDS)
  list(REMOVE_DUPLICATES _backends)
  foreach(_b IN LISTS _backends)
    install(FILES ${PROJECT_SOURCE_DIR}/backends/${_b}/runtime/register_${_b}_backend.h
            DESTINATION ${TERN_INSTALL_INCLUDEDIR}/backends/${_b}/runtime)
  endforeach()

  # find_package(tern CONFIG): the targets plus the dependencies they link.
  set(TERN_PACKAGE_CUDA OFF)
  if(TARGET tern_cuda_backend)
    set(TERN_PACKAGE_CUDA ON)
  endif()
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ternConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/ternConfig.cmake
                                INSTALL_DESTINATION ${TERN_INSTALL_CMAKEDIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/ternConfigVersion.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/ternConfig.cmake ${PROJECT_BINARY_DIR}/ternConfigVersion.cmake
          DESTINATION ${TERN_INSTALL_CMAKEDIR})

  # tern.pc: the C API in libtern.so, relocatable (paths relative to the .pc file).
  set(_pkgconfig_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  file(RELATIVE_PATH TERN_PC_PREFIX_FROM_PCFILEDIR /${_pkgconfig_dir} /)
  string(REGEX REPLACE "/$" "" TERN_PC_PREFIX_FROM_PCFILEDIR "${TERN_PC_PREFIX_FROM_PCFILEDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tern.pc.in ${PROJECT_BINARY_DIR}/tern.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/tern.pc DESTINATION ${_pkgconfig_dir})
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL tern_install_rules)
