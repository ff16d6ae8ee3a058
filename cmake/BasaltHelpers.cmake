# Helpers shared by every directory's CMakeLists.txt.

# Unity builds (README "Build facts"): a source that includes cpp-httplib is compiled on its own.
# httplib.h includes <resolv.h>, whose arpa/nameser_compat.h defines DELETE, ADD, INT, QUERY,
# STATUS and about a hundred more names as macros; in a unit they would rewrite the identifiers of
# every file after it (WriteOperation::DELETE).
function(basalt_unity_exclude_leaky_headers)
  foreach(_src ${ARGN})
    file(STRINGS ${_src} _leaky REGEX "^#include <httplib\\.h>")
    if(_leaky)
      set_source_files_properties(${_src} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# basalt_add_library(NAME DEPS...): one library per source directory, built from every *.cc in
# it that is neither a test (*_test.cc) nor a program's main (*_main.cc). Includes are rooted at
# src/.
function(basalt_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER _srcs EXCLUDE REGEX "_(test|main)\\.cc$")
  if(NOT _srcs)
    return()  # A component whose first files have not landed yet.
  endif()
  basalt_unity_exclude_leaky_headers(${_srcs})
  add_library(${name} ${_srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${BASALT_WARNING_FLAGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Test code itself is compiled at -O1 in optimized builds (the libraries it tests keep -O2):
# about 20% less compile time for the half of the build that is tests.
set(BASALT_TEST_OPT_FLAGS $<$<CONFIG:RelWithDebInfo,Release>:-O1>)

# basalt_add_test(NAME DEPS...): one gtest binary per directory from every *_test.cc in it,
# registered with ctest suite by suite (`<binary>:<Suite>`, cmake/DiscoverTestSuites.cmake) and
# labelled "unit".
function(basalt_add_test name)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  file(GLOB _tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT _tests)
    return()
  endif()
  basalt_unity_exclude_leaky_headers(${_tests})
  add_executable(${name} ${_tests})
  target_compile_options(${name} PRIVATE ${BASALT_WARNING_FLAGS} ${BASALT_TEST_OPT_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # Written when the binary is linked; until then ctest shows one failing placeholder test.
  set(_suites ${CMAKE_CURRENT_BINARY_DIR}/${name}_suites.cmake)
  add_custom_command(
    TARGET ${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D TEST_EXECUTABLE=$<TARGET_FILE:${name}> -D OUT=${_suites}
            -D LABELS=${ARG_LABELS} -D WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}
            -P ${PROJECT_SOURCE_DIR}/cmake/DiscoverTestSuites.cmake
    BYPRODUCTS ${_suites}
    VERBATIM)
  set(_include ${CMAKE_CURRENT_BINARY_DIR}/${name}_include.cmake)
  file(WRITE ${_include}
       "if(EXISTS [=[${_suites}]=])\n"
       "  include([=[${_suites}]=])\n"
       "else()\n"
       "  add_test([=[${name}_NOT_BUILT]=] [=[${name}_NOT_BUILT]=])\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_include})
endfunction()

# basalt_add_executable(NAME SOURCE DEPS...): a program (daemon, tool, example) built into
# ${CMAKE_BINARY_DIR}/bin, where test harnesses and scripts find it; linked with tcmalloc unless
# BASALT_TCMALLOC is off or sanitizers are on.
function(basalt_add_executable name source)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE ${BASALT_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} ${BASALT_MALLOC_LIBRARY})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endfunction()
