#!/usr/bin/env bash
# Builds gpuscope and runs every test: the regular build (unit, end-to-end,
# samples on simgpu, schema evolution, fuzz corpus replay, the conformance corpus), the
# bundle, the packages (cmake --install, .deb, pip wheel), the same unit and fuzz tests under AddressSanitizer + UBSan with the
# conformance corpus run under that build's libgpuscope.so, and bounded libFuzzer runs of
# the trace reader, the control protocol, the Nsight Systems and the Kineto importers when
# clang's fuzzer runtime is present.
# Usage: scripts/test.sh            (from a fresh clone: installs what is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${GPUSCOPE_JOBS:-$(nproc)}

./scripts/install-deps.sh

echo "== regular build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --output-on-failure --timeout 600)

echo "== relocatable bundle, used from an empty directory with a clean environment"
./scripts/bundle.sh build
tests/bundle/check_bundle.sh dist/gpuscope-*-linux-x86_64.tar.gz

echo "== packages: cmake --install, the .deb and the pip wheel, each used from a clean place"
tests/packaging/check_packages.sh build

echo "== AddressSanitizer + UBSan build (capture core, reader, fuzz replay, the conformance corpus under it)"
# The corpus programs are the regular build's (nvcc runs once); only the
# library, the CLI and the tests are instrumented.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUSCOPE_SANITIZE=ON \
      -DGPUSCOPE_BUILD_SAMPLES=OFF -DGPUSCOPE_BUILD_BENCHMARKS=OFF -DGPUSCOPE_CONFORMANCE_FROM="$PWD/build" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest -j"$jobs" --output-on-failure --timeout 900)

if command -v clang++ >/dev/null 2>&1 && \
   ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "== libFuzzer: trace reader"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSCOPE_FUZZ=ON \
        -DGPUSCOPE_BUILD_SAMPLES=OFF -DGPUSCOPE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_reader fuzz_reader_seeds fuzz_control fuzz_control_seeds \
        fuzz_nsys fuzz_nsys_seeds fuzz_kineto fuzz_kineto_seeds
  (cd build-fuzz && ctest -R fuzz.reader_libfuzzer --output-on-failure --timeout 900)
  echo "== libFuzzer: control protocol (30 s)"
  (cd build-fuzz && ctest -R fuzz.control_libfuzzer --output-on-failure --timeout 300)
  echo "== libFuzzer: Nsight Systems SQLite import (60 s)"
  (cd build-fuzz && ctest -R fuzz.nsys_libfuzzer --output-on-failure --timeout 300)
  echo "== libFuzzer: Kineto JSON import (60 s)"
  (cd build-fuzz && ctest -R fuzz.kineto_libfuzzer --output-on-failure --timeout 300)
else
  echo "== libFuzzer run skipped: clang's fuzzer runtime is not installed (corpus replay ran above)"
fi
echo "== all tests passed"
