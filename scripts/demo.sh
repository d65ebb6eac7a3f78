#!/usr/bin/env bash
# The main job: build gpuscope and profile a bundled CUDA workload with it —
# on the real GPU when one is usable here, otherwise on simgpu (the project's
# simulated GPU), and say which. Then show what the trace holds and the
# analyzer's verdict, evidence, call sites and fix.
# Usage: scripts/demo.sh [SAMPLE [ARGS...]]   (default: pcie_bound)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${GPUSCOPE_JOBS:-$(nproc)}

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null

sample=${1:-pcie_bound}
[ $# -gt 0 ] && shift
if [ ! -x "build/bin/$sample" ]; then
  echo "demo: sample $sample is not built; using minimal_cuda" >&2
  sample=minimal_cuda
fi

# samples/simgpu/gpu-or-simgpu asks the CUDA runtime itself whether a GPU is
# usable (build/bin/gpu_probe), then runs on it or on simgpu and says which.
runner=()
if [ -x samples/simgpu/gpu-or-simgpu ] && [ -x build/bin/gpu_probe ]; then
  runner=(samples/simgpu/gpu-or-simgpu build)
else
  echo "demo: simgpu is not built: running $sample on whatever CUDA stack this machine has"
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-demo-XXXXXX")
set +e
"${runner[@]}" build/bin/gpuscope run -o "$out" -- "build/bin/$sample" "$@"
status=$?
set -e
echo "demo: $sample exited with status $status"
for trace in "$out"/*.gpuscope; do
  [ -e "$trace" ] || { echo "demo: no trace was written" >&2; exit 1; }
  echo
  build/bin/gpuscope info "$trace"
  echo
  build/bin/gpuscope analyze "$trace"
done
echo
echo "demo: traces are in $out"
