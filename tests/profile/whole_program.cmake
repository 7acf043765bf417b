# NNVM_PROFILE=FILE records a whole program: runs COMMAND with it set and
# checks that the program succeeds, the file holds Chrome trace events of
# every kind, and the summary table went to stderr.
#   cmake "-DCOMMAND=prog;args" -DFILE=out.json -P whole_program.cmake
get_filename_component(dir ${FILE} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
file(REMOVE ${FILE})
execute_process(COMMAND ${CMAKE_COMMAND} -E env NNVM_PROFILE=${FILE} ${COMMAND}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT EXISTS ${FILE})
  message(FATAL_ERROR "NNVM_PROFILE wrote no ${FILE}\nstderr: ${err}")
endif()
file(READ ${FILE} json)
foreach(pattern "^{\"traceEvents\": \\[" "\"cat\": \"op\"" "\"cat\": \"flush\"" "\"cat\": \"cache\""
        "\"cat\": \"compile\"" "\"cat\": \"stage\"" "\"cat\": \"kernel\"" "\"cat\": \"memory\"" "\"thread_name\"")
  if(NOT json MATCHES "${pattern}")
    message(FATAL_ERROR "${FILE} has no match for ${pattern}")
  endif()
endforeach()
if(NOT err MATCHES "profile written to .*Name +Category +Calls")
  message(FATAL_ERROR "no summary table on stderr:\n${err}")
endif()
