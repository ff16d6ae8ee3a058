# Run after a unit test binary is linked (basalt_add_test): lists its gtest suites and writes a
# ctest file with one test per suite, `<binary>:<Suite>`, which runs `--gtest_filter=<Suite>.*`.
#
# Why suites and not cases: the unit binaries hold ~1,600 cases, most of them milliseconds long,
# and a process per case cost more than the cases themselves (20-30 ms to start a binary linked
# with gRPC, ~3x that on a loaded 2-core machine, plus ctest's own bookkeeping). A suite is still
# small enough for ctest to spread the binaries over the cores; a failing suite's output names the
# failing case, which `<binary> --gtest_filter=<Suite>.<Case>` runs alone.
#
# Inputs (-D): TEST_EXECUTABLE, OUT (the file to write), LABELS, WORKING_DIR.

execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  WORKING_DIRECTORY "${WORKING_DIR}"
  OUTPUT_VARIABLE _listing
  ERROR_VARIABLE _errors
  RESULT_VARIABLE _result
  TIMEOUT 60)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${_result}):\n${_errors}")
endif()

get_filename_component(_binary "${TEST_EXECUTABLE}" NAME)
set(_content "")
string(REPLACE "\n" ";" _lines "${_listing}")
foreach(_line IN LISTS _lines)
  # Suite lines start in column 0 and end with '.', optionally followed by "  # TypeParam = ...".
  if(_line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(_suite "${CMAKE_MATCH_1}")
    if(_suite MATCHES "^DISABLED_|/DISABLED_")
      continue()  # gtest would run none of its cases.
    endif()
    string(APPEND _content
      "add_test([=[${_binary}:${_suite}]=] [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${_suite}.*]=])\n"
      "set_tests_properties([=[${_binary}:${_suite}]=] PROPERTIES LABELS [=[${LABELS}]=] "
      "WORKING_DIRECTORY [=[${WORKING_DIR}]=])\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${_content}")
