# Compares the dynamic symbols (name@version) of simgpu's libcudart.so.13 and
# libcuda.so.1 with the toolkit's real runtime and stub driver.
include(${CMAKE_CURRENT_LIST_DIR}/dynamic_symbols.cmake)

foreach(pair "SIMGPU_CUDART;REAL_CUDART" "SIMGPU_CUDA;REAL_CUDA")
  list(GET pair 0 ours)
  list(GET pair 1 theirs)
  dynamic_symbols(${${ours}} "." ours_list)
  dynamic_symbols(${${theirs}} "." theirs_list)
  set(missing ${theirs_list})
  list(REMOVE_ITEM missing ${ours_list})
  set(extra ${ours_list})
  list(REMOVE_ITEM extra ${theirs_list})
  if(missing OR extra)
    message(FATAL_ERROR "${${ours}}: missing [${missing}] extra [${extra}]")
  endif()
  list(LENGTH ours_list n)
  message(STATUS "${${ours}}: the same ${n} exports as ${${theirs}}")
endforeach()
