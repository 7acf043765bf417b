# `nnvm bench MODEL --json FILE`, then tools/bench_report on that file: the
# page has the model's case with a fused and an eager bar and their ratio.
#   cmake -DREPORT=bench_report -DCLI=nnvm -DMODEL=m.pb -DWORK=dir -P model.cmake
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CLI} bench ${MODEL} --batch 2 --iters 3 --json ${WORK}/model.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nnvm bench: exit ${rc}: ${out}${err}")
endif()
execute_process(COMMAND ${REPORT} ${WORK}/model.json -o ${WORK}/model.html RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_report: exit ${rc}: ${err}")
endif()
file(READ ${WORK}/model.html html)
foreach(pattern "<h2>nnvm_bench_model/model.pb/batch:2</h2>" "data-variant=\"fused\"" "data-variant=\"eager\""
        "[0-9]\\.[0-9][0-9]x<" "CPU: <b>[^<]+</b>")
  if(NOT html MATCHES "${pattern}")
    message(FATAL_ERROR "the model's report has no match for ${pattern}")
  endif()
endforeach()
