# tools/bench_report on a saved nnvm_bench JSON (with Google Benchmark's bare
# NaN counters): the page names the CPU, has a bar per variant of each case
# and ratios to eager; bad input and bad arguments are refused.
#   cmake -DREPORT=bench_report -DINPUT=results.json -DOUT=report.html -P check.cmake
execute_process(COMMAND ${REPORT} ${INPUT} -o ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}: ${out}${err}")
endif()
file(READ ${OUT} html)
foreach(pattern "^<!DOCTYPE html>" "CPU: <b>[^<]+</b>" "<h2>BM_Sum/rows</h2>" "<h2>BM_SoftmaxOp</h2>"
        "data-variant=\"fused\"" "data-variant=\"eager\"" "data-variant=\"handwritten\"" "[0-9]\\.[0-9][0-9]x<")
  if(NOT html MATCHES "${pattern}")
    message(FATAL_ERROR "${OUT} has no match for ${pattern}")
  endif()
endforeach()
string(REGEX MATCHALL "<rect class=\"bar\"" bars "${html}")
list(LENGTH bars n)
if(n LESS 11)
  message(FATAL_ERROR "${n} bars; the input has 11 (case, variant) pairs")
endif()
execute_process(COMMAND ${REPORT} ${CMAKE_CURRENT_LIST_FILE} -o ${OUT}.bad RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "is not JSON")
  message(FATAL_ERROR "a file that is not JSON: exit ${rc}, ${err}")
endif()
execute_process(COMMAND ${REPORT} ${INPUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "usage: bench_report")
  message(FATAL_ERROR "no -o: exit ${rc}, ${err}")
endif()
