# The memory timeline and the bench report rendered by headless Chromium
# (Debian's chromium-headless-shell): each page's screenshot must show its
# chart's colours over areas no legend swatch reaches, so the SVG drew.
#   cmake -DCHROMIUM=... -DPAGE=memory_page -DREPORT=bench_report -DCOLOURS=png_colours
#         -DRESULTS=results.json -DDIR=out -P render.cmake
# Without a browser the test says SKIP (CTest's SKIP_REGULAR_EXPRESSION).
if(NOT EXISTS "${CHROMIUM}")
  message("SKIP: no headless Chromium (${CHROMIUM}); Debian package chromium-headless-shell")
  return()
endif()
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit status ${rc}\n${out}${err}")
  endif()
  message("${out}")
endfunction()
function(render page png)
  # --no-sandbox: CI runs as root; a profile of the test's own, no user's
  run(${CHROMIUM} --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=${DIR}/profile
      --window-size=1280,1000 --screenshot=${png} file://${page})
  if(NOT EXISTS ${png})
    message(FATAL_ERROR "Chromium wrote no screenshot of ${page}")
  endif()
endfunction()

# The memory timeline: an area per phase, each taller than a legend swatch (12 x 12).
run(${PAGE} ${DIR}/mem.html)
render(${DIR}/mem.html ${DIR}/mem.png)
run(${COLOURS} ${DIR}/mem.png "#9e9e9e:400" "#4c78a8:400" "#f58518:400" "#54a24b:400")

# The bench report: bars of fused, eager and reference variants.
run(${REPORT} ${RESULTS} -o ${DIR}/report.html)
render(${DIR}/report.html ${DIR}/report.png)
run(${COLOURS} ${DIR}/report.png "#4c78a8:1000" "#f58518:1000" "#54a24b:400")
