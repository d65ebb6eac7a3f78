#!/usr/bin/env bash
# Builds the relocatable bundle for GPU nodes that cannot install anything:
#   dist/gpuscope-<version>-linux-x86_64.tar.gz
# Layout once unpacked (any directory; nothing refers to the build tree):
#   bin/gpuscope            the CLI (its C++ runtime compiled in; see analyzer/CMakeLists.txt)
#   lib/lib{dw,elf,z,...}   what the CLI needs beyond glibc
#   lib/libgpuscope.so      the capture library (own C++ runtime, hidden)
#   lib/libgpuscope_importers.so  the Kineto and nsys importers, loaded by the CLI when it opens a foreign file
#   lib/libcupti.so.13      CUPTI (redistributable), dlopen'ed by libgpuscope.so at injection
#   lib/libunwind.so.8      call stacks: the fast walker's fallback, dlopen'ed by libgpuscope.so once a stack needs it (at start with GPUSCOPE_UNWINDER=libunwind)
#   samples/bin/            the bottleneck samples and test programs (need the
#                           node's libcudart.so.13, as any CUDA program does)
#   samples/simgpu/         the simulated GPU, to try the bundle on a CPU machine
#   conformance/            the conformance corpus (tests/conformance): bin/ (each
#                           program with shared and with static cudart, the cuBLAS
#                           plugin), conformance.py and expectations.py
#   gpu-check.sh            the real-GPU validation (docs/gpu-validation.md)
# Usage: scripts/bundle.sh [BUILD_DIR]   (default: build, configured here)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${GPUSCOPE_JOBS:-$(nproc)}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j"$jobs" >/dev/null

version=$(sed -n 's/^#define GPUSCOPE_VERSION_STRING "\(.*\)"/\1/p' "$build/generated/gpuscope_version.h")
[ -n "$version" ] || { echo "bundle: no version in $build/generated/gpuscope_version.h" >&2; exit 1; }
name=gpuscope-$version-linux-x86_64
stage=dist/$name
rm -rf "$stage" "dist/$name.tar.gz"
mkdir -p "$stage/bin" "$stage/lib" "$stage/samples/bin" "$stage/samples/simgpu/lib" "$stage/samples/simgpu/nodes"

# Debug info stays in the build tree; the bundle ships stripped copies.
ship() { objcopy --strip-debug "$1" "$2"; }
ship "$build/bin/gpuscope" "$stage/bin/gpuscope"
ship "$build/lib/libgpuscope.so" "$stage/lib/libgpuscope.so"
ship "$build/lib/libgpuscope_importers.so" "$stage/lib/libgpuscope_importers.so"
# The CUPTI the collector was compiled against: libgpuscope.so looks for it
# next to itself first (cupti/cupti_api.cpp), so a node whose toolkit is
# missing or of another version still gets device activity.
cupti=$(sed -n 's/^CUDA_cupti_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
[ -n "$cupti" ] && [ -e "$cupti" ] || { echo "bundle: no libcupti in $build/CMakeCache.txt (CUDA_cupti_LIBRARY)" >&2; exit 1; }
cp -L "$cupti" "$stage/lib/libcupti.so.13"
# libunwind for call stacks, also looked for next to libgpuscope.so first
# (preload/stacks/unwinder.cpp): GPU nodes often have none installed, and
# without it the traced program's calls carry no stacks (no call sites, no
# Python lines). Its one dependency, liblzma.so.5, is part of every base image.
# awk reads to the end: leaving early would end ldconfig by SIGPIPE, and pipefail
# would take its 141 for the script's.
unwind=$(ldconfig -p | awk '/libunwind\.so\.8 .*x86-64/ && !found {print $NF; found = 1}')
[ -n "$unwind" ] || { echo "bundle: libunwind.so.8 not found (apt-get install libunwind-dev)" >&2; exit 1; }
cp -L "$unwind" "$stage/lib/libunwind.so.8"
# The shared libraries bin/gpuscope needs beyond glibc (elfutils libdw for
# symbolization and what it pulls in), and those of the importer module
# (simdjson, SQLite, the C++ runtime): shipped in lib/, found through the
# executable's RPATH $ORIGIN/../lib, which also serves indirect
# dependencies, and the module's $ORIGIN.
ldd "$build/bin/gpuscope" "$build/lib/libgpuscope_importers.so" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done

programs=(pcie_bound sync_bound alloc_churn memory_bound cpu_bound compute_bound cpu_fallback
          driver_api gpu_probe minimal_cuda minimal_cuda_static dlopen_cudart hooked_call_loop
          d2d_copies queued_kernels cuda_errors write_after_idle profiled_phases service_loop
          array_user array_driver_user churn_host dlsym_driver_user)
for p in "${programs[@]}"; do
  [ -x "$build/bin/$p" ] || { echo "bundle: $build/bin/$p is missing (samples need nvcc)" >&2; exit 1; }
  ship "$build/bin/$p" "$stage/samples/bin/$p"
done
# The plugin churn_host loads, and a stand-in for another interposer
# (gpu-check.sh, "loader"; tests/e2e).
for lib in libchurn_plugin.so libother_interposer.so; do ship "$build/tests/e2e/$lib" "$stage/samples/bin/$lib"; done
mkdir -p "$stage/conformance/bin"
[ -x "$build/conformance/vector_add" ] || { echo "bundle: $build/conformance is missing (samples need nvcc)" >&2; exit 1; }
for p in "$build"/conformance/*; do ship "$p" "$stage/conformance/bin/$(basename "$p")"; done
cp tests/conformance/conformance.py tests/conformance/expectations.py "$stage/conformance/"
cp -P "$build"/simgpu/lib/lib*.so* "$stage/samples/simgpu/lib/"
cp samples/simgpu/nodes/*.json "$stage/samples/simgpu/nodes/"
cp samples/simgpu/gpu-or-simgpu "$stage/samples/gpu-or-simgpu"
cp scripts/gpu-check.sh "$stage/gpu-check.sh"
cat >"$stage/README" <<EOF
gpuscope $version for x86-64 Linux (glibc >= 2.36). Nothing to install.

  bin/gpuscope run -o traces/ -- ./your_program args...
  bin/gpuscope info traces/<file>.gpuscope

The CUDA program finds the node's own libcudart/libcuda as it always does.
samples/gpu-or-simgpu samples samples/bin/pcie_bound runs a sample on the
GPU when one is usable, else on samples/simgpu (a SIMULATED GPU).
./gpu-check.sh runs every sample with and without gpuscope on a real GPU and
prints the validation table, then the conformance corpus (conformance/;
needs python3).
EOF

tar -C dist -czf "dist/$name.tar.gz" "$name"
echo "dist/$name.tar.gz ($(du -h "dist/$name.tar.gz" | cut -f1))"
