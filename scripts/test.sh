#!/usr/bin/env bash
# Builds gpuscope and runs every test: the regular build (unit, end-to-end,
# samples on simgpu, schema evolution, fuzz corpus replay, the conformance corpus), the
# bundle, the packages (cmake --install, .deb, pip wheel), the same unit and fuzz tests under AddressSanitizer + UBSan with the
# conformance corpus run under that build's libgpuscope.so, and bounded libFuzzer runs of
# the trace reader, the control protocol, the Nsight Systems and Kineto importers and the
# Python line tables and doctor's baseline files when clang's fuzzer runtime is present. Each stage prints its
# start time and the seconds since the start (CI allows 90 minutes in all).
# Usage: scripts/test.sh            (from a fresh clone: installs what is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${GPUSCOPE_JOBS:-$(nproc)}

./scripts/install-deps.sh

# ccache, with a cache of this checkout's own (build-ccache/): the pip wheel
# below is built from source in build-wheel/ with the regular build's flags, so
# its ~175 files come from the cache instead of being compiled a second time.
# Paths under the checkout are hashed relative to it (CCACHE_BASEDIR), and the
# build directory's name is left out (CCACHE_NOHASHDIR), so the two build
# directories share entries; the cache cannot change what is built, only skip work.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="$PWD/build-ccache" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 \
         CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

stage() { echo "== $* ($(date +%H:%M:%S), ${SECONDS} s in)"; }

stage "regular build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --output-on-failure --timeout 600)

stage "relocatable bundle, used from an empty directory with a clean environment"
./scripts/bundle.sh build
tests/bundle/check_bundle.sh dist/gpuscope-*-linux-x86_64.tar.gz

stage "packages: cmake --install, the .deb and the pip wheel, each used from a clean place"
tests/packaging/check_packages.sh build

stage "AddressSanitizer + UBSan build (capture core, reader, fuzz replay, the conformance corpus under it)"
# The corpus programs are the regular build's (nvcc runs once); only the
# library, the CLI and the tests are instrumented.
# Line tables only (-g1): the sanitizers' reports keep file:line, and the
# build is spared full debug information it never uses.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DGPUSCOPE_SANITIZE=ON \
      -DGPUSCOPE_BUILD_SAMPLES=OFF -DGPUSCOPE_BUILD_BENCHMARKS=OFF -DGPUSCOPE_CONFORMANCE_FROM="$PWD/build" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest -j"$jobs" --output-on-failure --timeout 900)

if command -v clang++ >/dev/null 2>&1 && \
   ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  stage "libFuzzer: the trace reader (150 s), the control protocol (30 s), Nsight Systems and Kineto imports (60 s each), Python line tables and doctor baselines (20 s each)"
  # Every library is built with coverage and the sanitizers (GPUSCOPE_FUZZ);
  # -O1 and line tables only, as libFuzzer builds usually are. The six runs
  # are independent and single-threaded, so they share the cores.
  flags="-O1 -gline-tables-only -DNDEBUG"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSCOPE_FUZZ=ON \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
        -DGPUSCOPE_BUILD_SAMPLES=OFF -DGPUSCOPE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_reader fuzz_reader_seeds fuzz_control fuzz_control_seeds \
        fuzz_nsys fuzz_nsys_seeds fuzz_kineto fuzz_kineto_seeds fuzz_python_lines fuzz_python_lines_seeds \
        fuzz_baseline fuzz_baseline_seeds
  (cd build-fuzz && ctest -R 'fuzz\..*_libfuzzer' -j"$jobs" --output-on-failure --timeout 600)
else
  echo "== libFuzzer run skipped: clang's fuzzer runtime is not installed (corpus replay ran above)"
fi
stage "all tests passed"
