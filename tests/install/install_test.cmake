# The steps of tests/install (cmake -P), chosen by STEP:
#   install    cmake --install BUILD_DIR into a fresh PREFIX
#   cmake      examples/c_api (static and shared) and examples/cpp_module configured with
#              find_package(tern CONFIG) against PREFIX, built and run on MODEL
#   pkgconfig  examples/c_api compiled as C99 with `pkg-config --cflags --libs tern` and run
# Every run must exit 0 and print FORWARD_REGEX (and LEAKY_REGEX for the C example).
cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# Runs a built example on MODEL and checks its output against the hand-worked values.
function(check_example what program regex)
  run("${what}" ${program} ${MODEL})
  if(NOT run_output MATCHES "${regex}")
    message(FATAL_ERROR "${what}: output does not match '${regex}':\n${run_output}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX} ${WORK})
  run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(f include/tern.h include/tern/runtime/extension/module.h lib/cmake/tern/ternConfig.cmake
            bin/tern)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "cmake --install did not install ${f}")
    endif()
  endforeach()
  file(GLOB_RECURSE pc ${PREFIX}/*/tern.pc)
  file(GLOB_RECURSE shared ${PREFIX}/*/libtern.so)
  file(GLOB_RECURSE static ${PREFIX}/*/libtern_c.a)
  if(NOT pc OR NOT shared OR NOT static)
    message(FATAL_ERROR "cmake --install: tern.pc '${pc}', libtern.so '${shared}', "
                        "libtern_c.a '${static}' (all three expected)")
  endif()
  message(STATUS "installed into ${PREFIX}")

elseif(STEP STREQUAL "cmake")
  set(c_regex "${FORWARD_REGEX}.*${LEAKY_REGEX}")
  foreach(variant c_static c_shared cpp_module)
    set(src ${SOURCE_DIR}/examples/c_api)
    set(extra -DTERN_C_EXAMPLE_SHARED=OFF)
    set(program tern_c_example)
    set(regex "${c_regex}")
    if(variant STREQUAL "c_shared")
      set(extra -DTERN_C_EXAMPLE_SHARED=ON)
    elseif(variant STREQUAL "cpp_module")
      set(src ${SOURCE_DIR}/examples/cpp_module)
      set(extra)
      set(program tern_cpp_example)
      set(regex "${FORWARD_REGEX}")
    endif()
    set(build ${WORK}/cmake_${variant})
    file(REMOVE_RECURSE ${build})
    run("configure ${variant}" ${CMAKE_COMMAND} -S ${src} -B ${build} -G "${GENERATOR}"
        -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_C_COMPILER=${C_COMPILER}
        -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release ${extra})
    run("build ${variant}" ${CMAKE_COMMAND} --build ${build})
    check_example("find_package(tern) ${variant}" ${build}/${program} "${regex}")
  endforeach()

elseif(STEP STREQUAL "pkgconfig")
  file(GLOB_RECURSE pc ${PREFIX}/*/tern.pc)
  get_filename_component(pc_dir "${pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run("pkg-config --cflags" ${PKG_CONFIG} --cflags tern)
  separate_arguments(cflags UNIX_COMMAND "${run_output}")
  run("pkg-config --libs" ${PKG_CONFIG} --libs tern)
  separate_arguments(libs UNIX_COMMAND "${run_output}")
  run("pkg-config libdir" ${PKG_CONFIG} --variable=libdir tern)
  string(STRIP "${run_output}" libdir)
  file(MAKE_DIRECTORY ${WORK})
  set(program ${WORK}/tern_c_example_pkgconfig)
  run("cc (pkg-config flags)" ${C_COMPILER} -std=c99 -pedantic-errors -Wall -Wextra ${cflags}
      ${SOURCE_DIR}/examples/c_api/tern_c_example.c -o ${program} ${libs} -Wl,-rpath,${libdir})
  check_example("pkg-config tern" ${program} "${FORWARD_REGEX}.*${LEAKY_REGEX}")

else()
  message(FATAL_ERROR "install_test.cmake: unknown STEP '${STEP}'")
endif()
