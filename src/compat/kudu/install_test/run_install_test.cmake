# cmake -P script: install the build tree into a temporary prefix, build the Kudu-style consumer
# project against it, start a local cluster, run the program against it, destroy the cluster
# (also on failure). Arguments: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, BASALT_TOOL.
file(REMOVE_RECURSE ${WORK_DIR})
set(_prefix ${WORK_DIR}/prefix)
set(_cluster ${WORK_DIR}/cluster)
# Install and build: any failure ends the script (before a cluster exists).
foreach(_step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${_prefix}"
    # The consumer sees only the installed tree: no include path into the sources.
    "${CMAKE_COMMAND};-S;${SOURCE_DIR};-B;${WORK_DIR}/build;-G;${GENERATOR};-DCMAKE_PREFIX_PATH=${_prefix};-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${WORK_DIR}/build")
  execute_process(COMMAND ${_step} OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
endforeach()

execute_process(COMMAND ${BASALT_TOOL} local start --dir ${_cluster}
  RESULT_VARIABLE start_rc OUTPUT_VARIABLE start_out ERROR_VARIABLE start_err)
string(REGEX MATCH "(^|\n)(127\\.0\\.0\\.1:[0-9]+)(\n|$)" _m "${start_out}")
set(_master ${CMAKE_MATCH_2})
if(start_rc EQUAL 0 AND _master)
  execute_process(COMMAND ${WORK_DIR}/build/kudu_style_program ${_master}
    RESULT_VARIABLE prog_rc OUTPUT_VARIABLE prog_out ERROR_VARIABLE prog_err)
endif()
execute_process(COMMAND ${BASALT_TOOL} local destroy --dir ${_cluster}
  RESULT_VARIABLE destroy_rc OUTPUT_VARIABLE destroy_out ERROR_VARIABLE destroy_err)
if(NOT start_rc EQUAL 0 OR NOT _master)
  message(FATAL_ERROR "basalt local start failed (${start_rc}):\n${start_out}\n${start_err}")
endif()
message(STATUS "${prog_out}")
if(NOT prog_rc EQUAL 0)
  message(FATAL_ERROR "kudu_style_program failed (${prog_rc}):\n${prog_out}\n${prog_err}")
endif()
if(NOT destroy_rc EQUAL 0)
  message(FATAL_ERROR "basalt local destroy failed (${destroy_rc}):\n${destroy_out}\n${destroy_err}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
