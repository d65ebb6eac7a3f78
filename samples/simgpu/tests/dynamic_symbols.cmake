# dynamic_symbols(<library> <type regex> <out>): the symbols `nm -D
# --defined-only` lists for a library whose nm type matches (e.g. "." for
# all, "W" for weak), as name@version, sorted.  Shared by the export checks.
function(dynamic_symbols lib types out)
  execute_process(COMMAND ${NM} -D --defined-only ${lib} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${lib}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]* +${types} [^ \n]+" lines "${text}")
  list(TRANSFORM lines REPLACE "^.* " "")
  list(FILTER lines EXCLUDE REGEX "^libcudart")  # the version node's own symbol
  list(SORT lines)
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()
