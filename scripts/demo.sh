#!/usr/bin/env bash
# The main job: build gpuscope and profile a bundled CUDA workload with it —
# on the real GPU when one is usable here, otherwise on simgpu (the project's
# simulated GPU), and say which. Then show what gpuscope reports.
# Usage: scripts/demo.sh [SAMPLE [ARGS...]]   (default: pcie_bound)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${GPUSCOPE_JOBS:-$(nproc)}

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSCOPE_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$jobs" >/dev/null

sample=${1:-pcie_bound}
[ $# -gt 0 ] && shift
if [ ! -x "build/bin/$sample" ]; then
  echo "demo: sample $sample is not built; using minimal_cuda" >&2
  sample=minimal_cuda
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "demo: running $sample on the real GPU: $(nvidia-smi -L | head -n 1)"
  env_prefix=()
elif [ -d build/simgpu/lib ]; then
  echo "demo: no usable GPU here: running $sample on simgpu, the SIMULATED GPU (build/simgpu/lib)"
  env_prefix=(env "LD_LIBRARY_PATH=$root/build/simgpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
else
  echo "demo: no usable GPU and no simgpu build: running $sample on the real CUDA runtime without a driver"
  env_prefix=()
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-demo-XXXXXX")
set +e
"${env_prefix[@]}" build/bin/gpuscope run -o "$out" -- "build/bin/$sample" "$@"
status=$?
set -e
echo "demo: $sample exited with status $status"
for trace in "$out"/*.gpuscope; do
  [ -e "$trace" ] || { echo "demo: no trace was written" >&2; exit 1; }
  echo
  build/bin/gpuscope info "$trace"
done
echo
echo "demo: traces are in $out"
