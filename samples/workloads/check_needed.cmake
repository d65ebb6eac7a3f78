# cmake -DREADELF=readelf -DBINARIES="a;b" -P check_needed.cmake
# Each sample must load the CUDA runtime as a shared library (NEEDED
# libcudart.so.13) -- so the same binary runs on a real GPU and on simgpu --
# and must not carry a static copy of it.
foreach(bin ${BINARIES})
  execute_process(COMMAND ${READELF} -d ${bin} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT dyn MATCHES "NEEDED[^\n]*\\[libcudart\\.so\\.13\\]")
    message(FATAL_ERROR "${bin} does not link libcudart.so.13 dynamically:\n${dyn}")
  endif()
  execute_process(COMMAND ${READELF} -sW ${bin} OUTPUT_VARIABLE syms)
  # A static runtime shows up as cuda* functions defined in the binary itself
  # (numeric section index) rather than undefined (UND) references.
  if(syms MATCHES "FUNC[^\n]* [0-9]+ cuda[A-Z][A-Za-z]*\n")
    message(FATAL_ERROR "${bin} contains a static CUDA runtime")
  endif()
  get_filename_component(name ${bin} NAME)
  message(STATUS "${name}: NEEDED libcudart.so.13")
endforeach()
