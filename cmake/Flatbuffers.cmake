# gpuscope_flatc(<target> <schema.fbs>): generates <name>_generated.h into the
# build tree at build time (generated code is never committed) and exposes it
# through an INTERFACE target.
function(gpuscope_flatc target schema)
  get_filename_component(name ${schema} NAME_WE)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  set(header ${out_dir}/${name}_generated.h)
  add_custom_command(
    OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${FLATC_EXECUTABLE} --cpp --gen-mutable --scoped-enums --gen-name-strings
            -o ${out_dir} ${schema}
    DEPENDS ${schema} ${FLATC_EXECUTABLE}
    COMMENT "flatc: generating ${name}_generated.h"
    VERBATIM)
  add_custom_target(${target}_gen DEPENDS ${header})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE ${out_dir} ${FLATBUFFERS_INCLUDE_DIR})
endfunction()
