# Builds the corpus into ${CMAKE_BINARY_DIR}/conformance: NAME (shared
# cudart, for simgpu and real GPUs) and NAME_static (nvcc's default, the
# static runtime), linked from the same objects, for the one architecture
# the samples use (CMAKE_CUDA_ARCHITECTURES).
set(CONFORMANCE_CORPUS_DIR ${CMAKE_BINARY_DIR}/conformance)
set(programs_dir ${CMAKE_CURRENT_LIST_DIR}/programs)
find_package(OpenMP REQUIRED COMPONENTS CXX)

function(conformance_objects target source)
  add_library(${target} OBJECT ${programs_dir}/${source})
  target_include_directories(${target} PRIVATE ${programs_dir} ${PROJECT_SOURCE_DIR}/samples/workloads)
endfunction()

# conformance_link(<target> <Shared|Static> <output name> <libraries...>)
function(conformance_link target runtime output)
  target_link_libraries(${target} PRIVATE ${ARGN})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${output} LINKER_LANGUAGE CUDA CUDA_RUNTIME_LIBRARY ${runtime}
    RUNTIME_OUTPUT_DIRECTORY ${CONFORMANCE_CORPUS_DIR} LIBRARY_OUTPUT_DIRECTORY ${CONFORMANCE_CORPUS_DIR})
endfunction()

# The cuBLAS part of cublas_gemm and of cublas_plugin's plugin.
conformance_objects(conformance_gemm_objects gemm.cu)

foreach(name ${CONFORMANCE_PROGRAMS})
  conformance_objects(conformance_${name}_objects ${name}.cu)
  set(libraries conformance_${name}_objects)
  if(name STREQUAL omp_streams)
    target_compile_options(conformance_${name}_objects PRIVATE -Xcompiler=${OpenMP_CXX_FLAGS})
    list(APPEND libraries ${OpenMP_gomp_LIBRARY})
  elseif(name STREQUAL worker_errors)
    list(APPEND libraries Threads::Threads)
  elseif(name STREQUAL cublas_gemm)
    list(APPEND libraries conformance_gemm_objects CUDA::cublas)
  elseif(name STREQUAL cublas_plugin)
    list(APPEND libraries ${CMAKE_DL_LIBS})
  endif()
  foreach(runtime Shared Static)
    set(suffix "")
    if(runtime STREQUAL Static)
      set(suffix _static)
    endif()
    add_executable(conformance_${name}${suffix})
    conformance_link(conformance_${name}${suffix} ${runtime} ${name}${suffix} ${libraries})
    if(name STREQUAL cublas_plugin)
      # The plugin it dlopens: lib<program>_gemm.so, linked to the same runtime.
      add_library(conformance_${name}${suffix}_gemm SHARED)
      conformance_link(conformance_${name}${suffix}_gemm ${runtime} ${name}${suffix}_gemm conformance_gemm_objects CUDA::cublas)
      add_dependencies(conformance_${name}${suffix} conformance_${name}${suffix}_gemm)
    endif()
  endforeach()
endforeach()
