# Locates gpuscope's dependencies. Every one of them is a Debian package that
# scripts/install-deps.sh installs; docs/dependencies.md says why each is here.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

# --- CUDA toolkit (headers, CUPTI, nvcc) --------------------------------------
if(NOT DEFINED CUDAToolkit_ROOT)
  if(DEFINED ENV{CUDAToolkit_ROOT})
    set(CUDAToolkit_ROOT $ENV{CUDAToolkit_ROOT})
  else()
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
endif()
# Checked by hand first: FindCUDAToolkit would otherwise fall back to any
# nvcc on PATH and quietly build against a toolkit nobody asked for.
if(NOT EXISTS ${CUDAToolkit_ROOT}/include/cuda.h)
  message(FATAL_ERROR "gpuscope: CUDA toolkit not found at '${CUDAToolkit_ROOT}' (no include/cuda.h): install the CUDA 13 toolkit or configure with -DCUDAToolkit_ROOT=/path/to/cuda")
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "gpuscope: CUDA toolkit not found at '${CUDAToolkit_ROOT}': install the CUDA 13 toolkit or configure with -DCUDAToolkit_ROOT=/path/to/cuda")
endif()
if(CUDAToolkit_VERSION_MAJOR LESS 13)
  message(FATAL_ERROR "gpuscope: CUDA toolkit ${CUDAToolkit_VERSION} at '${CUDAToolkit_ROOT}' is older than 13.0: point -DCUDAToolkit_ROOT at a CUDA 13 toolkit")
endif()
message(STATUS "gpuscope: CUDA toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_ROOT}")

# --- libraries -----------------------------------------------------------------
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)  # the analyzer's --json output; simgpu's node files
if(GPUSCOPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
find_package(SQLite3 REQUIRED)          # Nsight Systems SQLite exports (analyzer/import/nsys_*)
if(GPUSCOPE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

# flatbuffers: header-only use (builder, verifier); flatc generates headers.
find_path(FLATBUFFERS_INCLUDE_DIR flatbuffers/flatbuffers.h REQUIRED)
find_program(FLATC_EXECUTABLE flatc REQUIRED)

# zstd: the static archive is PIC on Debian, so it links into libgpuscope.so
# with hidden symbols and the traced program's own libzstd (if any) is untouched.
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_library(ZSTD_STATIC_LIBRARY NAMES libzstd.a HINTS ${ZSTD_LIBRARY_DIRS})
if(NOT ZSTD_STATIC_LIBRARY)
  message(FATAL_ERROR "gpuscope: libzstd.a not found (Debian package libzstd-dev)")
endif()

# libunwind: the nongnu libunwind through pkg-config, never LLVM's libunwind.so.1.
# Only its headers are used at build time; the capture library dlopens
# libunwind.so.8 with RTLD_LOCAL so that its `backtrace` never interposes the
# traced program's glibc backtrace().
pkg_check_modules(LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)

# Importing other profilers' traces (analyzer/import/): simdjson parses each
# Kineto event (shared library; scripts/bundle.sh ships it), zlib inflates
# .json.gz as it is read. zlib is linked shared: libdw needs libz.so.1 anyway
# (so the bundle and the wheel ship it already), and a static copy is an
# embedded library, which Debian policy (lintian) refuses in the .deb.
find_package(simdjson REQUIRED)
find_package(ZLIB REQUIRED)

# elfutils libdw: offline symbolization in the analyzer.
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)

# protobuf: `export --format perfetto` writes Perfetto's protobuf trace
# through classes protoc generates at build time from
# schemas/perfetto_trace.proto. The lite runtime is enough (no reflection);
# its static archive keeps bin/gpuscope free of a libprotobuf to ship.
find_package(Protobuf REQUIRED)
find_library(PROTOBUF_LITE_STATIC_LIBRARY NAMES libprotobuf-lite.a)
if(NOT PROTOBUF_LITE_STATIC_LIBRARY)
  set(PROTOBUF_LITE_STATIC_LIBRARY protobuf::libprotobuf-lite)
endif()
