# GPU machine bundle: binaries that run on a machine other than this one, and
# the header-only dependencies to rebuild them there.
#
# The GPU machine has nvcc and CMake but none of the Debian -dev packages and
# no network, and its system libraries may differ from this machine's. So:
#
#  * FLEETSIM_STATIC_RUNTIME (option) links fleetsim, the CUDA backend's
#    module libfleetsim_cuda.so, kernels_test and gemm_baseline with static
#    libstdc++/libgcc, and the module and gemm_baseline with the static CUDA
#    runtime (fleetsim and kernels_test hold no CUDA code: they dlopen the
#    module, which must lie beside them; see kernels/cuda_module.h). What
#    stays shared: glibc (cudart_static dlopens the driver, which needs a
#    dynamic glibc) and cuBLAS/cuBLASLt (the toolkit ships no static cuBLAS
#    here; libcublasLt alone is 540 MB). The binaries get an RPATH to
#    /usr/local/cuda's library folders for those.
#
#  * FLEETSIM_DEPS_ROOT (path) points every find_package of a Debian
#    dependency (Eigen3, nlohmann_json, CLI11, GTest, Boost) at a bundle made
#    by `make gpu-bundle` (build-gpu/deps) and at nothing else: configuration
#    prints the include folders each imported target carries and fails if
#    one lies outside the bundle.
#
#  * `cmake -DFLEETSIM_BUNDLE_TREE=<build tree> -DFLEETSIM_BUNDLE_DIR=<out>
#    -P cmake/GpuBundle.cmake` (script mode, run by `make gpu-bundle` after
#    building the four targets in a FLEETSIM_STATIC_RUNTIME tree) fills
#    <out> with the stripped binaries, the module beside them, and <out>/deps: Eigen, nlohmann/json,
#    CLI11 and GoogleTest headers, libgtest.a and libgtest_main.a, the Boost
#    headers the build actually read (from the compiler's dependency files;
#    all of Boost is 160 MB), and a small CMake package config for each.
#
# Included from the top-level CMakeLists.txt before its find_package calls.

# ============================================================================
# Script mode: assemble the bundle.
# ============================================================================
if(CMAKE_SCRIPT_MODE_FILE)
  foreach(v FLEETSIM_BUNDLE_TREE FLEETSIM_BUNDLE_DIR)
    if(NOT DEFINED ${v})
      message(FATAL_ERROR "GpuBundle.cmake: pass -D${v}=... (see the comment at the top of the file)")
    endif()
    get_filename_component(${v} "${${v}}" ABSOLUTE)
  endforeach()
  set(tree "${FLEETSIM_BUNDLE_TREE}")
  set(out "${FLEETSIM_BUNDLE_DIR}")
  set(manifest "${tree}/gpu_bundle_manifest.cmake")
  if(NOT EXISTS "${manifest}")
    message(FATAL_ERROR "GpuBundle.cmake: ${manifest} is missing: configure ${tree} with "
                        "-DFLEETSIM_STATIC_RUNTIME=ON -DFLEETSIM_CUDA=ON -DFLEETSIM_TESTS=ON first")
  endif()
  include("${manifest}")  # FLEETSIM_BUNDLE_* variables, written by fleetsim_gpu_bundle_finalize below
  foreach(v BINARIES EIGEN_ROOT JSON_ROOT CLI11_ROOT GTEST_ROOT GTEST_LIB GTEST_MAIN_LIB)
    if(NOT FLEETSIM_BUNDLE_${v})
      message(FATAL_ERROR "GpuBundle.cmake: ${manifest} has no FLEETSIM_BUNDLE_${v}: configure ${tree} with "
                          "-DFLEETSIM_TESTS=ON (GoogleTest) and the Debian -dev packages installed")
    endif()
  endforeach()
  foreach(v EIGEN_ROOT JSON_ROOT CLI11_ROOT GTEST_ROOT BOOST_ROOT)
    string(REGEX REPLACE "(.)/+$" "\\1" FLEETSIM_BUNDLE_${v} "${FLEETSIM_BUNDLE_${v}}")  # find_path's trailing /
  endforeach()

  # Replace only a previous bundle (or nothing): never a folder of other files.
  file(GLOB existing "${out}/*")
  if(existing AND NOT EXISTS "${out}/BUNDLE.txt")
    message(FATAL_ERROR "GpuBundle.cmake: ${out} exists and holds no BUNDLE.txt: not replacing it")
  endif()
  file(REMOVE_RECURSE "${out}")
  file(MAKE_DIRECTORY "${out}/deps/include" "${out}/deps/lib" "${out}/deps/cmake")

  # ---- Binaries, without debug info (they must fit the carry limit) ---------
  find_program(strip_tool NAMES strip)
  find_program(readelf_tool NAMES readelf)
  set(binary_notes "")
  foreach(bin IN LISTS FLEETSIM_BUNDLE_BINARIES)
    if(NOT EXISTS "${bin}")
      message(FATAL_ERROR "GpuBundle.cmake: ${bin} was not built (build the targets fleetsim fleetsim_cuda "
                          "kernels_test gemm_baseline in ${tree} first)")
    endif()
    get_filename_component(name "${bin}" NAME)
    file(COPY "${bin}" DESTINATION "${out}")
    if(strip_tool)
      execute_process(COMMAND "${strip_tool}" --strip-debug "${out}/${name}" RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "GpuBundle.cmake: strip --strip-debug ${out}/${name} failed")
      endif()
    endif()
    # What the loader will ask the GPU machine for. A shared libstdc++ or
    # CUDA runtime here would defeat FLEETSIM_STATIC_RUNTIME.
    if(readelf_tool)
      execute_process(COMMAND "${readelf_tool}" -d "${out}/${name}" OUTPUT_VARIABLE dyn)
      string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dyn}")
      string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" needed "${needed}")
      foreach(lib IN LISTS needed)
        if(lib MATCHES "^lib(stdc\\+\\+|gcc_s|cudart)\\.so")
          message(FATAL_ERROR "GpuBundle.cmake: ${name} needs ${lib}; reconfigure ${tree} with "
                              "-DFLEETSIM_STATIC_RUNTIME=ON")
        endif()
      endforeach()
      execute_process(COMMAND "${readelf_tool}" -V "${out}/${name}" OUTPUT_VARIABLE ver)
      string(REGEX MATCHALL "GLIBC_[0-9]+\\.[0-9]+(\\.[0-9]+)?" glibc "${ver}")
      set(newest "0")
      foreach(g IN LISTS glibc)
        string(REPLACE "GLIBC_" "" g "${g}")
        if(g VERSION_GREATER newest)
          set(newest "${g}")
        endif()
      endforeach()
      string(REPLACE ";" " " needed_text "${needed}")
      string(APPEND binary_notes "${name}: needs glibc >= ${newest}; shared libraries: ${needed_text}\n")
    endif()
  endforeach()

  # ---- Header-only dependencies and GoogleTest ----------------------------------
  # Each FLEETSIM_BUNDLE_*_ROOT is the include folder holding that library's
  # top folder (Eigen/, nlohmann/, CLI/, gtest/).
  file(COPY "${FLEETSIM_BUNDLE_EIGEN_ROOT}/Eigen" DESTINATION "${out}/deps/include")
  file(COPY "${FLEETSIM_BUNDLE_JSON_ROOT}/nlohmann" DESTINATION "${out}/deps/include")
  file(COPY "${FLEETSIM_BUNDLE_CLI11_ROOT}/CLI" DESTINATION "${out}/deps/include")
  file(COPY "${FLEETSIM_BUNDLE_GTEST_ROOT}/gtest" DESTINATION "${out}/deps/include")
  file(COPY "${FLEETSIM_BUNDLE_GTEST_LIB}" "${FLEETSIM_BUNDLE_GTEST_MAIN_LIB}" DESTINATION "${out}/deps/lib")
  get_filename_component(gtest_lib_name "${FLEETSIM_BUNDLE_GTEST_LIB}" NAME)
  get_filename_component(gtest_main_lib_name "${FLEETSIM_BUNDLE_GTEST_MAIN_LIB}" NAME)

  # Boost: only the headers the compiler read while building the bundle's
  # targets, as listed in its dependency files (gcc -MD writes *.d beside
  # each object). Rebuilding different sources there may need more: rerun
  # `make gpu-bundle` after changing what includes Boost.
  set(boost_headers "")
  if(FLEETSIM_BUNDLE_BOOST_ROOT)
    file(GLOB_RECURSE depfiles "${tree}/*.d")
    foreach(d IN LISTS depfiles)
      file(READ "${d}" text)
      # Tokens of the depfile that name a file in a boost/ folder; keep those
      # under the include folder the build found Boost in.
      string(REGEX MATCHALL "[^ \t\r\n\\\\]*/boost/[^ \t\r\n\\\\]+" hits "${text}")
      foreach(h IN LISTS hits)
        cmake_path(NORMAL_PATH h)
        string(FIND "${h}" "${FLEETSIM_BUNDLE_BOOST_ROOT}/boost/" at)
        if(at EQUAL 0)
          list(APPEND boost_headers "${h}")
        endif()
      endforeach()
    endforeach()
    list(REMOVE_DUPLICATES boost_headers)
    foreach(h IN LISTS boost_headers)
      file(RELATIVE_PATH rel "${FLEETSIM_BUNDLE_BOOST_ROOT}" "${h}")
      get_filename_component(rel_dir "${rel}" DIRECTORY)
      file(COPY "${h}" DESTINATION "${out}/deps/include/${rel_dir}")
    endforeach()
  endif()
  list(LENGTH boost_headers boost_count)

  # ---- Package configs: one small file per package, relative to itself ------
  # Imported targets are GLOBAL so the top-level check in
  # fleetsim_gpu_bundle_finalize sees the ones found in tests/ too.
  set(prelude "# Written by cmake/GpuBundle.cmake for a fleetsim GPU bundle.\n"
              "get_filename_component(_fleetsim_deps \"\${CMAKE_CURRENT_LIST_DIR}/..\" ABSOLUTE)\n")
  function(write_version pkg version)
    file(WRITE "${out}/deps/cmake/${pkg}ConfigVersion.cmake"
         "set(PACKAGE_VERSION \"${version}\")\n"
         "set(PACKAGE_VERSION_COMPATIBLE TRUE)\n"
         "if(PACKAGE_FIND_VERSION AND PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n"
         "  set(PACKAGE_VERSION_COMPATIBLE FALSE)\n"
         "endif()\n"
         "if(PACKAGE_FIND_VERSION AND PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)\n"
         "  set(PACKAGE_VERSION_EXACT TRUE)\n"
         "endif()\n")
  endfunction()
  function(write_interface_config pkg target version)
    file(WRITE "${out}/deps/cmake/${pkg}Config.cmake" ${prelude}
         "if(NOT TARGET ${target})\n"
         "  add_library(${target} INTERFACE IMPORTED GLOBAL)\n"
         "  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"\${_fleetsim_deps}/include\")\n"
         "endif()\n"
         "set(${pkg}_INCLUDE_DIRS \"\${_fleetsim_deps}/include\")\n")
    write_version(${pkg} "${version}")
  endfunction()
  write_interface_config(Eigen3 Eigen3::Eigen "${FLEETSIM_BUNDLE_EIGEN_VERSION}")
  write_interface_config(nlohmann_json nlohmann_json::nlohmann_json "${FLEETSIM_BUNDLE_JSON_VERSION}")
  write_interface_config(CLI11 CLI11::CLI11 "${FLEETSIM_BUNDLE_CLI11_VERSION}")

  file(WRITE "${out}/deps/cmake/GTestConfig.cmake" ${prelude}
       "if(NOT TARGET Threads::Threads)\n"
       "  find_package(Threads REQUIRED)\n"
       "endif()\n"
       "if(NOT TARGET GTest::gtest)\n"
       "  add_library(GTest::gtest STATIC IMPORTED GLOBAL)\n"
       "  set_target_properties(GTest::gtest PROPERTIES\n"
       "    IMPORTED_LOCATION \"\${_fleetsim_deps}/lib/${gtest_lib_name}\"\n"
       "    IMPORTED_LINK_INTERFACE_LANGUAGES CXX\n"
       "    INTERFACE_INCLUDE_DIRECTORIES \"\${_fleetsim_deps}/include\"\n"
       "    INTERFACE_COMPILE_OPTIONS -DGTEST_HAS_PTHREAD=1\n"
       "    INTERFACE_LINK_LIBRARIES Threads::Threads)\n"
       "  add_library(GTest::gtest_main STATIC IMPORTED GLOBAL)\n"
       "  set_target_properties(GTest::gtest_main PROPERTIES\n"
       "    IMPORTED_LOCATION \"\${_fleetsim_deps}/lib/${gtest_main_lib_name}\"\n"
       "    IMPORTED_LINK_INTERFACE_LANGUAGES CXX\n"
       "    INTERFACE_INCLUDE_DIRECTORIES \"\${_fleetsim_deps}/include\"\n"
       "    INTERFACE_LINK_LIBRARIES \"Threads::Threads;GTest::gtest\")\n"
       "endif()\n")
  write_version(GTest "${FLEETSIM_BUNDLE_GTEST_VERSION}")

  # FindBoost takes a config package if Boost_DIR holds one; it wants
  # Boost_<component>_FOUND for each requested component. Every component is
  # offered as headers only: a target that needs a compiled Boost library
  # fails to link, which says so plainly.
  file(WRITE "${out}/deps/cmake/BoostConfig.cmake" ${prelude}
       "foreach(_t headers boost \${Boost_FIND_COMPONENTS})\n"
       "  if(NOT TARGET Boost::\${_t})\n"
       "    add_library(Boost::\${_t} INTERFACE IMPORTED GLOBAL)\n"
       "    set_target_properties(Boost::\${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"\${_fleetsim_deps}/include\")\n"
       "  endif()\n"
       "  set(Boost_\${_t}_FOUND TRUE)\n"
       "endforeach()\n"
       "set(Boost_INCLUDE_DIRS \"\${_fleetsim_deps}/include\")\n"
       "set(Boost_LIBRARIES \"\")\n")
  write_version(Boost "${FLEETSIM_BUNDLE_BOOST_VERSION}")

  # ---- Provenance, stamp and size -------------------------------------------------
  if(EXISTS "${tree}/SOURCE_STAMP")
    file(COPY "${tree}/SOURCE_STAMP" DESTINATION "${out}")
  endif()
  file(GLOB_RECURSE all_files "${out}/*")
  set(total 0)
  foreach(f IN LISTS all_files)
    file(SIZE "${f}" s)
    math(EXPR total "${total} + ${s}")
  endforeach()
  math(EXPR total_kib "${total} / 1024")
  string(TIMESTAMP now "%Y-%m-%dT%H:%M:%SZ" UTC)
  file(WRITE "${out}/BUNDLE.txt"
       "fleetsim GPU bundle, made ${now} by cmake/GpuBundle.cmake from ${tree}\n"
       "compiler: ${FLEETSIM_BUNDLE_COMPILER}; CUDA: ${FLEETSIM_BUNDLE_CUDA}\n"
       "${binary_notes}"
       "deps: Eigen ${FLEETSIM_BUNDLE_EIGEN_VERSION} (${FLEETSIM_BUNDLE_EIGEN_ROOT}), "
       "nlohmann_json ${FLEETSIM_BUNDLE_JSON_VERSION} (${FLEETSIM_BUNDLE_JSON_ROOT}), "
       "CLI11 ${FLEETSIM_BUNDLE_CLI11_VERSION} (${FLEETSIM_BUNDLE_CLI11_ROOT}), "
       "GoogleTest ${FLEETSIM_BUNDLE_GTEST_VERSION} (${FLEETSIM_BUNDLE_GTEST_ROOT}, ${FLEETSIM_BUNDLE_GTEST_LIB}), "
       "Boost ${FLEETSIM_BUNDLE_BOOST_VERSION}: ${boost_count} headers read by the build\n"
       "total: ${total_kib} KiB\n")
  file(READ "${out}/BUNDLE.txt" bundle_text)
  message("${bundle_text}")
  return()
endif()

# ============================================================================
# Project mode: options, dependency roots, and the per-target edits.
# ============================================================================
option(FLEETSIM_STATIC_RUNTIME
       "Link fleetsim, libfleetsim_cuda.so, kernels_test and gemm_baseline with static libstdc++/libgcc and CUDA runtime (for make gpu-bundle)"
       OFF)
set(FLEETSIM_DEPS_ROOT "" CACHE PATH
    "A dependency bundle from make gpu-bundle (build-gpu/deps): find Eigen3, nlohmann_json, CLI11, GTest and Boost only there")

if(FLEETSIM_DEPS_ROOT)
  get_filename_component(_fleetsim_deps_root "${FLEETSIM_DEPS_ROOT}" ABSOLUTE)
  if(NOT EXISTS "${_fleetsim_deps_root}/cmake/Eigen3Config.cmake")
    message(FATAL_ERROR "FLEETSIM_DEPS_ROOT=${FLEETSIM_DEPS_ROOT} holds no bundle "
                        "(no cmake/Eigen3Config.cmake): run make gpu-bundle where the Debian packages are")
  endif()
  # <Package>_DIR is where find_package looks first, in config mode and via
  # FindGTest/FindBoost (both try a config package before searching).
  foreach(_pkg Eigen3 nlohmann_json CLI11 GTest Boost)
    set(${_pkg}_DIR "${_fleetsim_deps_root}/cmake" CACHE PATH "fleetsim: from FLEETSIM_DEPS_ROOT" FORCE)
  endforeach()
  set(CMAKE_FIND_USE_PACKAGE_REGISTRY OFF)
  set(CMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY OFF)
endif()
if(FLEETSIM_STATIC_RUNTIME)
  # Should a target link a compiled Boost library, take the archive: the GPU
  # machine has no libboost_*.so.
  set(Boost_USE_STATIC_LIBS ON)
endif()

# Runs once the whole tree is configured, when every target exists.
function(fleetsim_gpu_bundle_finalize)
  # fleetsim_cuda is the module the other two programs load (kernels/).
  set(bundled fleetsim fleetsim_cuda kernels_test gemm_baseline)

  if(FLEETSIM_STATIC_RUNTIME)
    if(NOT FLEETSIM_HAVE_CUDA)
      message(WARNING "FLEETSIM_STATIC_RUNTIME: CUDA is off, so there is no kernels' CUDA backend or gemm_baseline")
    endif()
    # The shared CUDA runtime becomes the static one wherever it is named.
    # (CMake's implicit CUDA link line adds cudart_static as well; linking
    # both, as a default build does, loads two runtimes.)
    foreach(t fleetsim_cuda gemm_baseline)
      if(TARGET ${t})
        foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
          get_target_property(libs ${t} ${prop})
          if(libs)
            list(TRANSFORM libs REPLACE "^CUDA::cudart$" "CUDA::cudart_static")
            list(TRANSFORM libs REPLACE "^\\$<LINK_ONLY:CUDA::cudart>$" "$<LINK_ONLY:CUDA::cudart_static>")
            set_target_properties(${t} PROPERTIES ${prop} "${libs}")
          endif()
        endforeach()
      endif()
    endforeach()
    foreach(t IN LISTS bundled)
      if(TARGET ${t})
        # Link with the C++ driver (nvcc does not take -static-libstdc++).
        set_target_properties(${t} PROPERTIES LINKER_LANGUAGE CXX CUDA_RUNTIME_LIBRARY Static)
        target_link_options(${t} PRIVATE -static-libstdc++ -static-libgcc)
        # cuBLAS stays shared: find it in the toolkit's usual places.
        set_property(TARGET ${t} APPEND PROPERTY BUILD_RPATH
                     /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
      endif()
    endforeach()

    # Where each dependency came from, for the script mode above.
    if(FLEETSIM_TESTS AND NOT TARGET GTest::gtest)
      find_package(GTest QUIET)
    endif()
    foreach(pair "EIGEN;Eigen3::Eigen;Eigen/Core" "JSON;nlohmann_json::nlohmann_json;nlohmann/json.hpp"
                 "CLI11;CLI11::CLI11;CLI/CLI.hpp" "GTEST;GTest::gtest;gtest/gtest.h" "BOOST;Boost::headers;boost/version.hpp")
      list(GET pair 0 key)
      list(GET pair 1 target)
      list(GET pair 2 header)
      unset(root_${key})
      if(TARGET ${target})
        get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
        find_path(root_${key} ${header} HINTS ${dirs} NO_DEFAULT_PATH NO_CACHE)
      endif()
      if(NOT root_${key} AND NOT key STREQUAL "BOOST")
        message(WARNING "FLEETSIM_STATIC_RUNTIME: ${header} not found through ${target}: make gpu-bundle will fail")
      endif()
    endforeach()
    set(binaries "")
    foreach(t IN LISTS bundled)
      if(TARGET ${t})
        list(APPEND binaries "$<TARGET_FILE:${t}>")
      endif()
    endforeach()
    set(gtest_lib "")
    set(gtest_main_lib "")
    if(TARGET GTest::gtest AND TARGET GTest::gtest_main)
      set(gtest_lib "$<TARGET_FILE:GTest::gtest>")
      set(gtest_main_lib "$<TARGET_FILE:GTest::gtest_main>")
    endif()
    string(CONCAT manifest
         "# Written by cmake/GpuBundle.cmake at configure time; read by its script mode.\n"
         "set(FLEETSIM_BUNDLE_BINARIES \"${binaries}\")\n"
         "set(FLEETSIM_BUNDLE_EIGEN_ROOT \"${root_EIGEN}\")\n"
         "set(FLEETSIM_BUNDLE_EIGEN_VERSION \"${Eigen3_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_JSON_ROOT \"${root_JSON}\")\n"
         "set(FLEETSIM_BUNDLE_JSON_VERSION \"${nlohmann_json_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_CLI11_ROOT \"${root_CLI11}\")\n"
         "set(FLEETSIM_BUNDLE_CLI11_VERSION \"${CLI11_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_GTEST_ROOT \"${root_GTEST}\")\n"
         "set(FLEETSIM_BUNDLE_GTEST_VERSION \"${GTest_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_GTEST_LIB \"${gtest_lib}\")\n"
         "set(FLEETSIM_BUNDLE_GTEST_MAIN_LIB \"${gtest_main_lib}\")\n"
         "set(FLEETSIM_BUNDLE_BOOST_ROOT \"${root_BOOST}\")\n"
         "set(FLEETSIM_BUNDLE_BOOST_VERSION \"${Boost_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_COMPILER \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\")\n"
         "set(FLEETSIM_BUNDLE_CUDA \"${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}\")\n")
    file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/gpu_bundle_manifest.cmake" CONTENT "${manifest}")
  endif()

  if(FLEETSIM_DEPS_ROOT)
    # Proof that the bundle, not the system, provides each dependency.
    get_filename_component(root "${FLEETSIM_DEPS_ROOT}" ABSOLUTE)
    if(FLEETSIM_TESTS AND NOT TARGET GTest::gtest)
      find_package(GTest QUIET)
    endif()
    foreach(target Eigen3::Eigen nlohmann_json::nlohmann_json CLI11::CLI11 Boost::headers GTest::gtest)
      if(NOT TARGET ${target})
        continue()
      endif()
      get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
      message(STATUS "fleetsim deps: ${target} include dirs: ${dirs}")
      foreach(d IN LISTS dirs)
        string(FIND "${d}" "${root}/" at)
        if(NOT at EQUAL 0)
          message(FATAL_ERROR "fleetsim deps: ${target} includes ${d}, outside FLEETSIM_DEPS_ROOT=${root}")
        endif()
      endforeach()
    endforeach()
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL fleetsim_gpu_bundle_finalize)
