# Runs one `nnvm` command line and checks its exit status and output:
#   cmake -DCOMMAND="nnvm;info;x.onnx" -DRC=1 -DMATCH="regex" -P expect.cmake
# MATCH is looked for in stdout followed by stderr; an error must be one line on stderr.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${RC}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'\nstdout: ${out}\nstderr: ${err}")
endif()
if(RC STREQUAL "1")
  string(REGEX MATCHALL "\n" lines "${err}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "an error must be one line on stderr, got ${n}:\n${err}")
  endif()
endif()
