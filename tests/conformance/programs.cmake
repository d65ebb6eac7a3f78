# Builds the corpus into ${CMAKE_BINARY_DIR}/conformance: NAME (shared
# cudart) and NAME_static (nvcc's default, the static runtime), linked from
# the same objects, for the one architecture the samples use.
set(CONFORMANCE_CORPUS_DIR ${CMAKE_BINARY_DIR}/conformance)
set(programs_dir ${CMAKE_CURRENT_LIST_DIR}/programs)

foreach(name ${CONFORMANCE_PROGRAMS})
  add_library(conformance_${name}_objects OBJECT ${programs_dir}/${name}.cu)
  target_include_directories(conformance_${name}_objects PRIVATE ${programs_dir} ${PROJECT_SOURCE_DIR}/samples/workloads)
  foreach(runtime Shared Static)
    set(target conformance_${name})
    set(output ${name})
    if(runtime STREQUAL Static)
      string(APPEND target _static)
      string(APPEND output _static)
    endif()
    add_executable(${target})
    target_link_libraries(${target} PRIVATE conformance_${name}_objects)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${output} LINKER_LANGUAGE CUDA
      CUDA_RUNTIME_LIBRARY ${runtime} RUNTIME_OUTPUT_DIRECTORY ${CONFORMANCE_CORPUS_DIR})
  endforeach()
endforeach()
