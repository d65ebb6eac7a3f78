#!/usr/bin/env bash
# Real-GPU validation, run from an unpacked bundle (scripts/bundle.sh) on a
# GPU node where nothing can be installed. Checks the node (gpuscope doctor),
# then runs every sample and its --fixed
# variant with and without gpuscope and prints one markdown table: verdict
# and whether it is the expected one, the counts gpuscope's hooks and CUPTI recorded,
# exit statuses and wall times. Then: a statically linked runtime, the driver
# API, a dlopen()ed runtime, PyTorch if present, the conformance corpus
# (conformance/, when python3 is there), and the hooked-call and
# launch-bound overhead. Raw logs and traces go to OUTDIR.
# Usage: ./gpu-check.sh [--simgpu] [OUTDIR]
#   --simgpu  run on samples/simgpu (to try the script on a CPU machine), its
#             simulated CUPTI included
#   GPU_CHECK_SECTIONS=a,b  only these sections (see want() below); unset = all
#   GPU_CHECK_TIMEOUT=S     per-program time limit (default 120)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
simgpu=0
[ "${1:-}" = --simgpu ] && { simgpu=1; shift; }
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-XXXXXX")}
mkdir -p "$out"
gs=$here/bin/gpuscope
bin=$here/samples/bin
limit=${GPU_CHECK_TIMEOUT:-120}

# The node's own CUDA runtime, as its CUDA programs would find it.
find_cudart() {
  ldconfig -p 2>/dev/null | awk '/libcudart\.so\.13 / && !found {print $NF; found = 1}' | xargs -r dirname
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libcudart.so.13" ] && echo "$d"
  done
}
if [ $simgpu = 1 ]; then
  export LD_LIBRARY_PATH=$here/samples/simgpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # simgpu's driver injects gpuscope at cuInit as a real one does, and its
  # simulated CUPTI records the model's work: the HOOKS/CUPTI columns and
  # the windows section mean on simgpu what they mean on a GPU.
  export SIMGPU_INJECTION=1 GPUSCOPE_CUPTI_PATH=$here/samples/simgpu/lib/libcupti.so.13
else
  # sed reads to the end (head -1 would end find_cudart by SIGPIPE under pipefail).
  cudart_dir=$(find_cudart | sed -n 1p)
  [ -n "$cudart_dir" ] && export LD_LIBRARY_PATH=$cudart_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

echo "# gpu-check $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
echo "gpuscope: $("$gs" --version 2>&1)"
if [ $simgpu = 0 ] && command -v nvidia-smi >/dev/null; then
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader 2>&1 | head -1)"
fi
echo "cudart: ${cudart_dir:-simgpu}"
if ! probe=$("$bin/gpu_probe" 2>&1); then
  echo "gpu-check: no usable GPU: $probe" >&2
  [ $simgpu = 1 ] || exit 1
fi
echo "probe: $probe"

now() { date +%s.%N; }
# run_timed LOG CMD...: runs CMD with a time limit, prints "STATUS SECONDS".
run_timed() {
  local log=$1; shift
  local t0 t1 rc
  t0=$(now)
  timeout "$limit" "$@" >"$log" 2>&1
  rc=$?
  t1=$(now)
  echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')"
}
# want SECTION: whether GPU_CHECK_SECTIONS (comma-separated; unset = all)
# names it. Sections: doctor samples cases windows other python imports
# conformance overhead cupti_cost torch_cost.
want() { [ -z "${GPU_CHECK_SECTIONS:-}" ] || [[ ,$GPU_CHECK_SECTIONS, == *,$1,* ]]; }
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
py=$(command -v python3 || true)
torch=0
if [ -n "$py" ] && [ $simgpu = 0 ] && "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  torch=1
fi

# counts TRACE: "copies kernels syncs allocs dropped" from gpuscope info, each
# of the first three as HOOKS/CUPTI (the hooks' records, the device's).
counts() {
  local info
  info=$("$gs" info "$1" 2>&1) || { echo "unreadable - - - -"; return; }
  local ev dev drop k n d
  ev=$(grep -m1 '^events:' <<<"$info")
  dev=$(grep -m1 '^device:' <<<"$info")
  drop=$(grep -m1 '^dropped:' <<<"$info" | grep -oE '[0-9]+' | head -1)
  for k in copies kernels syncs allocations; do
    n=$(grep -oE "[0-9]+ $k" <<<"$ev" | cut -d' ' -f1); n=${n:-0}
    d=$(grep -oE "[0-9]+ $k" <<<"$dev" | cut -d' ' -f1); d=${d:-0}
    if [ $k = allocations ]; then echo "$n"; else echo "$((n - d))/$d"; fi
  done | paste -sd' ' | tr -d '\n'
  echo " ${drop:-0}"
}
# verdict TRACE: the analyzer's verdict line; the whole report goes beside the trace.
verdict() {
  "$gs" analyze "$1" >"${1%.gpuscope}.analysis.txt" 2>&1
  sed -n '/^VERDICT: /{s///p;q}' "${1%.gpuscope}.analysis.txt"
}
# matches VERDICT WANT: "yes" when the verdict is (or, for "not X", is not) the class.
matches() {
  case $2 in
    "not "*) [[ $1 != "${2#not }"* ]] ;;
    *) [[ $1 == "$2"* ]] ;;
  esac && echo yes || echo NO
}

declare -A expected=(
  [pcie_bound]="PCIe-bound" [sync_bound]="sync-bound" [alloc_churn]="memory-bound"
  [memory_bound]="memory-bound" [cpu_bound]="CPU-bound" [compute_bound]="healthy: GPU-bound"
  [cpu_fallback]="silent CPU fallback")

if want doctor; then
# The node first (docs/doctor.md): the real NVML's answers to every check,
# which simgpu only models. Its JSON goes beside the logs.
echo "## Node check (gpuscope doctor)"
echo '```'
"$gs" doctor; echo "(exit $?)"
echo '```'
"$gs" doctor --json -o "$out/doctor.json" -f 2>"$out/doctor.err"
# The canary on real silicon: pinned and pageable copies against the link,
# and an empty kernel's launch (JIT-compiled PTX) on the real driver.
echo '```'
"$gs" doctor --canary --baseline "$out/doctor.json" -v 2>&1 | grep -A6 -E '^(ok|WARN|FAIL|----) +(canary|baseline|mps) '
echo '```'
fi

if want samples; then
echo
echo "| sample | verdict | expected | ok | copies hooks/CUPTI | kernels hooks/CUPTI | syncs hooks/CUPTI | allocs | dropped | exit plain/traced | wall plain | wall traced |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for s in pcie_bound sync_bound alloc_churn memory_bound cpu_bound compute_bound cpu_fallback; do
  for variant in "" --fixed; do
    label=$s${variant:+ $variant}
    file=$s${variant:+-fixed}
    envs=()
    # The fallback sample would just use the GPU: hide it, as a wrong
    # CUDA_VISIBLE_DEVICES does in production.
    [ $s = cpu_fallback ] && envs=(CUDA_VISIBLE_DEVICES=)
    read -r rc_p wall_p < <(run_timed "$out/$file.plain.log" env "${envs[@]}" "$bin/$s" $variant)
    read -r rc_t wall_t < <(run_timed "$out/$file.traced.log" env "${envs[@]}" \
      "$gs" run -o "$out/$file.gpuscope" -- "$bin/$s" $variant)
    want=${expected[$s]}
    [ -n "$variant" ] && want="not $want"
    [ $s = compute_bound ] && want="healthy: GPU-bound"
    read -r c k y a d < <(counts "$out/$file.gpuscope")
    v=$(verdict "$out/$file.gpuscope")
    echo "| $label | $v | $want | $(matches "$v" "$want") | $c | $k | $y | $a | $d | $rc_p/$rc_t | $wall_p s | $wall_t s |"
  done
done
fi

# window_row TRACE LABEL KERNELS: a capture window's or an attach's trace,
# its device collection and kernels (hooks/CUPTI); "yes" when CUPTI was
# active and saw every kernel the hooks recorded, and those were KERNELS
# (empty: at least one).
window_row() {
  local coll k
  coll=$("$gs" info "$1" 2>&1 | grep -m1 '^device:' | sed 's/.*collection: //')
  read -r _ k _ < <(counts "$1")
  local ok=NO hooks=${k%/*} dev=${k#*/}
  [[ $coll == CUPTI* ]] && [ "$dev" = "$hooks" ] && [ "${hooks:-0}" -gt 0 ] &&
    { [ -z "$3" ] || [ "$hooks" = "$3" ]; } && ok=yes
  echo "| $2 | ${coll:-unreadable} | $k | $ok |"
}

if want windows; then
# CUDA starts outside any window (set-up before cudaProfilerStart, a
# service long before its attach), so CUPTI is set up then and held off:
# each window, and each attach, must still get device records.
echo
echo "## Device activity in capture windows and attaches"
echo
echo "| run | device collection | kernels hooks/CUPTI | ok |"
echo "|---|---|---|---|"
w=$out/windows ctl=$out/windows/ctl
mkdir -p "$w" && mkdir -m 700 -p "$ctl"
timeout "$limit" "$gs" run -q -f -o "$w/range.gpuscope" --capture-range cudaProfilerApi --capture-range-end repeat \
  -- "$bin/profiled_phases" --rounds 3 --loads 3 --kernels 5 --clears 4 >"$w/range.log" 2>&1
window_row "$w/range.gpuscope" "cudaProfilerStart/Stop x3, repeat" 15
GPUSCOPE_CONTROL_DIR=$ctl timeout "$limit" "$gs" run --standby -q -o "$w/run/" -- "$bin/service_loop" --seconds 6 \
  >"$w/standby.log" 2>&1 &
standby_pid=$!
sock=
for _ in $(seq 100); do sock=$(ls "$ctl"/*.sock 2>/dev/null | head -1); [ -n "$sock" ] && break; sleep 0.1; done
sleep 1
for i in 1 2; do
  [ -n "$sock" ] && GPUSCOPE_CONTROL_DIR=$ctl timeout 30 "$gs" attach "$(basename "$sock" .sock)" --duration 1 \
    -o "$w/attach$i.gpuscope" >>"$w/attach.log" 2>&1
  sleep 0.5
done
wait $standby_pid
for i in 1 2; do window_row "$w/attach$i.gpuscope" "standby, attach $i (1 s)" ""; done
fi

# process_samples TRACE: what the driver's per-process utilization samples
# (trace format 1.8) held: how many, how many named the traced process, the
# median window and largest SM share, other pids. Real drivers are where the
# sampler's assumptions (realtime stamps, samples per poll) get checked.
process_samples() {
  local pid
  pid=$("$gs" info "$1" 2>/dev/null | sed -n 's/^process: *pid \([0-9]*\).*/\1/p')
  "$gs" export --format csv -o - "$1" 2>/dev/null | awk -F, -v self="${pid:-0}" '
    $5 == "process_gpu_sample" {
      n++; w[n] = $2 / 1e6
      match($0, /"pid [0-9]+/); p = substr($0, RSTART + 5, RLENGTH - 5)
      if (p == self) own++; else others[p] = 1
      match($0, /sm [0-9]+%/); sm = substr($0, RSTART + 3, RLENGTH - 4) + 0
      if (sm > top) top = sm
    }
    END {
      if (n == 0) { print "0 | - | - | - | - |"; exit }
      for (i = 2; i <= n; i++) { v = w[i]; for (j = i - 1; j > 0 && w[j] > v; j--) w[j + 1] = w[j]; w[j + 1] = v }
      k = 0; for (p in others) k++
      printf "%d | %d (pid %s) | %.1f ms | %d %% | %d |\n", n, own, self, w[int((n + 1) / 2)], top, k
    }'
}
if want samples; then
echo
echo "## Driver's per-process samples (NVML, trace format 1.8)"
echo "| sample | samples | naming the traced pid | median window | top SM share | other pids |"
echo "|---|---|---|---|---|---|"
for s in pcie_bound compute_bound; do
  echo "| $s | $(process_samples "$out/$s.gpuscope")"
done
fi

if want cases; then
echo
echo "## Verdict cases (docs/rules.md, \"Verdict cases\")"
echo "| case | verdict | expected | ok |"
echo "|---|---|---|---|"
# verdict_case NAME WANT [VAR=value...] -- PROGRAM ARGS...: the variables go
# to gpuscope run, which passes them to the program.
verdict_case() {
  local name=$1 want=$2 vars=()
  shift 2
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  run_timed "$out/$name.log" env "${vars[@]}" "$gs" run -o "$out/$name.gpuscope" -- "$@" >/dev/null
  local v
  v=$(verdict "$out/$name.gpuscope")
  echo "| $name | $v | $want | $(matches "$v" "$want") |"
}
verdict_case true "no CUDA work" -- true
verdict_case d2d_copies "not PCIe-bound" -- "$bin/d2d_copies"
verdict_case queued_kernels "not sync-bound" -- "$bin/queued_kernels" --kernels 400
verdict_case vector_add "too short to judge" -- "$here/conformance/bin/vector_add" --n=50000
# The real driver's virtual memory API (PyTorch's expandable segments).
verdict_case alloc_churn_expandable "memory-bound" -- "$bin/alloc_churn" --expandable --iters 800
verdict_case alloc_churn_expandable_fixed "not memory-bound" -- "$bin/alloc_churn" --expandable --fixed --iters 800
verdict_case vector_add_hidden "CUDA unavailable; the program failed" CUDA_VISIBLE_DEVICES= -- \
  "$here/conformance/bin/vector_add" --n=50000
# A working CUDA that refused the program's request: the program's error, not the driver's.
verdict_case cuda_errors_oversized "failed on a CUDA error" -- "$bin/cuda_errors" --oversized
verdict_case cuda_errors_too_many_threads "failed on a CUDA error" -- "$bin/cuda_errors" --too-many-threads
verdict_case cuda_errors_after_work "failed on a CUDA error" -- "$bin/cuda_errors" --after-work --oversized
fi

if want other; then
echo
echo "## Other ways of reaching the GPU (traced)"
echo "| program | exit | copies hooks/CUPTI | kernels hooks/CUPTI | syncs hooks/CUPTI | allocs | dropped | driver-level calls |"
echo "|---|---|---|---|---|---|---|---|"
other() {
  local name=$1; shift
  read -r rc _ < <(run_timed "$out/$name.log" "$gs" run -o "$out/$name.gpuscope" -- "$@")
  read -r c k y a d < <(counts "$out/$name.gpuscope")
  local drv
  drv=$("$gs" info "$out/$name.gpuscope" 2>/dev/null | grep -cE '^ +[0-9]+  cu[A-Z]')
  echo "| $name | $rc | $c | $k | $y | $a | $d | $drv kinds |"
}
other minimal_cuda_static "$bin/minimal_cuda_static"
other driver_api "$bin/driver_api"
other dlopen_cudart "$bin/dlopen_cudart" 3
# CUDA arrays (texture code, video decoders) and batched copies: the hooks'
# copies must match CUPTI's HtoA/AtoH/AtoA/AtoD/DtoA records, one more device
# record than host records for array_user (its two-copy batch is one call).
other array_user "$bin/array_user"
other array_driver_user "$bin/array_driver_user"
if want other && [ $torch = 1 ]; then
  other pytorch_matmul "$py" -c 'import torch
x = torch.randn(2048, 2048, device="cuda")
for _ in range(50): x = torch.tanh(x @ x)
h = x.cpu(); torch.cuda.synchronize(); print(float(h.sum()))'
fi
fi

# Programs that reach the runtime or the driver their own way
# (docs/interception.md): a plugin host that unloads a plugin linking the
# runtime and loads it again, the runtime mapped elsewhere each round
# (churn_host), and another interposer of the driver preloaded after
# gpuscope, as GPU-sharing layers are (other_interposer, dlsym_driver_user).
# The traced output must be the plain run's, and every round's calls in
# the trace.
if want loader; then
  echo
  echo "## Loader: a plugin host, another interposer (plain against traced)"
  echo "| program | exit plain/traced | same output | calls in the trace |"
  echo "|---|---|---|---|"
  # loader_case NAME FUNCTION [VAR=VALUE...] -- CMD...: FUNCTION's count from gpuscope info.
  loader_case() {
    local name=$1 function=$2 vars=() plain traced rc_p rc_t n
    shift 2
    while [ "$1" != "--" ]; do vars+=("$1"); shift; done
    shift
    plain=$(env "${vars[@]}" timeout "$limit" "$@" 2>"$out/$name.plain.err"); rc_p=$?
    traced=$(env "${vars[@]}" timeout "$limit" "$gs" run -q -o "$out/$name.gpuscope" -- "$@" 2>"$out/$name.err"); rc_t=$?
    printf '%s\n' "$plain" >"$out/$name.plain.out"; printf '%s\n' "$traced" >"$out/$name.out"
    n=$("$gs" info "$out/$name.gpuscope" 2>/dev/null | awk -v f="$function" '$2 == f {print $1; exit}')
    echo "| $name | $rc_p/$rc_t | $([ "$plain" = "$traced" ] && echo yes || echo NO) | $function ${n:-0} |"
  }
  loader_case churn_host cudaMalloc -- "$bin/churn_host" "$bin/libchurn_plugin.so"
  loader_case other_interposer cuMemAlloc_v2 LD_PRELOAD="$bin/libother_interposer.so" -- "$bin/dlsym_driver_user"
fi

# Python call sites on real PyTorch (docs/python.md): a training loop that
# copies each batch from pageable memory, then a loop that reads a result
# with .item() every step with host work between steps; the findings must
# name the script's own lines (marked "# line:").
if want python && [ $torch = 1 ]; then
  echo
  echo "## Python call sites (PyTorch, gpuscope run)"
  echo "| habit | script line | cited in the analysis | matches |"
  echo "|---|---|---|---|"
  cat >"$out/train_steps.py" <<'PY'
import time
import torch
# Steps of a few ms of GPU work and a 16 MB pageable input each, so the
# staged copy is a real cost.
torch.backends.cuda.matmul.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(2048, 2048), torch.randint(0, 10, (2048,))) for _ in range(8)]
for step in range(200):
    x, y = batches[step % 8]
    x, y = x.to("cuda"), y.to("cuda")  # line: pageable
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 100 == 0: print(step, loss.item())
# About 1 ms of GPU work a step, then .item(), then about 1 ms of host work
# (augmentation, logging): the wait empties the GPU's queue every step and
# the GPU idles through the host work (run 3: a .item() after steps the GPU
# was busy through was rightly not flagged, so it was not cited).
w = torch.randn(2048, 2048, device="cuda") / 64
h = torch.randn(2048, 2048, device="cuda")
with torch.no_grad():
    for step in range(1500):
        y = h
        for _ in range(3): y = torch.tanh(y @ w)
        value = y.sum().item()  # line: item
        until = time.perf_counter() + 0.001
        while time.perf_counter() < until: pass
PY
  run_timed "$out/train_steps.log" "$gs" run -o "$out/train_steps.gpuscope" -- "$py" "$out/train_steps.py" >/dev/null
  "$gs" analyze "$out/train_steps.gpuscope" >"$out/train_steps.txt" 2>&1
  for habit in item pageable; do
    line=$(grep -n "# line: $habit" "$out/train_steps.py" | cut -d: -f1)
    cited=$(grep -c "train_steps.py:$line)" "$out/train_steps.txt")
    echo "| $habit | train_steps.py:$line | $cited lines | $([ "$cited" -gt 0 ] && echo yes || echo NO) |"
  done
fi

# The Kineto importer on a real torch.profiler trace (docs/import.md): a
# loop whose DataLoader works on the training thread (time.sleep stands for
# decoding), and one that only queues GPU work. Profiled by PyTorch itself,
# not under gpuscope run (one CUPTI client at a time).
if want imports && [ $torch = 1 ]; then
  echo
  echo "## PyTorch profiler traces imported (gpuscope analyze on torch.profiler's JSON)"
  echo "| loop | verdict | expected | GPU time breakdown |"
  echo "|---|---|---|---|"
  for kind in input_bound healthy; do
    timeout "$limit" "$py" - "$kind" "$out/torch_$kind.pt.trace.json" >"$out/torch_$kind.log" 2>&1 <<'PY'
import sys, time, torch
from torch.profiler import profile, schedule, ProfilerActivity
kind, path = sys.argv[1], sys.argv[2]
class Slow(torch.utils.data.Dataset):
    def __len__(self): return 10**6
    def __getitem__(self, i):
        if kind == "input_bound": time.sleep(0.0005)
        return torch.randn(256)
loader = iter(torch.utils.data.DataLoader(Slow(), batch_size=64, num_workers=0))
w = torch.randn(256, 256, device="cuda")
# The healthy loop's GPU work is large kernels queued ahead (about 60 ms a
# step); in run 2 it was 400 tiny ones, too short to judge.
big = torch.randn(4096, 4096, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
             schedule=schedule(wait=1, warmup=1, active=8),
             on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
    for step in range(10):
        x = next(loader).cuda(non_blocking=True)
        for _ in range(20): x = torch.tanh(x @ w)
        if kind == "healthy":
            for _ in range(20): y = torch.tanh(big @ big)
        torch.cuda.synchronize()
        prof.step()
PY
    want=$([ $kind = input_bound ] && echo "CPU-bound" || echo "healthy")
    v=$(verdict "$out/torch_$kind.pt.trace.json")
    b=$("$gs" analyze "$out/torch_$kind.pt.trace.json" 2>/dev/null | grep -m1 'GPU time breakdown' | sed 's/^ *//')
    echo "| $kind | $v | $want | $b |"
  done
fi

if want conformance; then
echo
echo "## Conformance corpus (tests/conformance/README.md)"
# Each program plain and under gpuscope run: same exit status and stdout
# (timings masked), a complete trace holding what the program did; the
# static-cudart builds the same way without the count check. Logs (the
# harness's details) in OUTDIR/conformance/.
conformance() {
  local log=$1; shift
  local result
  timeout $((4 * limit)) "$py" "$here/conformance/conformance.py" --corpus "$here/conformance/bin" --gpuscope "$gs" \
    --timeout "$limit" "${where[@]}" "$@" >"$log" 2>&1
  result=$(head -1 "$log")
  case $result in
    *": passed "*) echo "passed" ;;
    *": FAILED") echo "FAILED: $(sed -n 2p "$log" | cut -c1-120)" ;;
    *) echo "ERROR: $(tail -1 "$log" | cut -c1-120)" ;;
  esac
}
if [ -z "$py" ] || [ ! -f "$here/conformance/conformance.py" ]; then
  echo "skipped: no python3 on this node"
else
  mkdir -p "$out/conformance"
  where=(--gpu)
  [ $simgpu = 1 ] && where=(--simgpu "$here/samples/simgpu/lib" --nodes "$here/samples/simgpu/nodes")
  echo "| program | shared cudart | static cudart |"
  echo "|---|---|---|"
  for p in $("$py" "$here/conformance/conformance.py" --list); do
    shared=$(conformance "$out/conformance/$p.log" --program "$p" --work "$out/conformance/$p")
    static=$(conformance "$out/conformance/$p.static.log" --program "$p" --static --work "$out/conformance/$p.static")
    echo "| $p | $shared | $static |"
  done
fi
fi

if want overhead; then
echo
echo "## Overhead"
mkdir -p "$out/overhead"
# What a hooked call costs (traced: LD_PRELOAD alone, so no CUPTI), what
# the interposition alone costs (passthrough: GPUSCOPE_DISABLE=1, the hooks
# pass every call through), and the call as `gpuscope run` leaves it (with
# CUPTI injected: its subscriber and device-work callbacks).
# The hooks stamp calls with rdtsc where the TSC is a clock
# (protocol/host_clock.h); elsewhere each stamp is a vDSO clock_gettime.
# Runs of 10 000 calls (5 000 with stacks) with 50 ms between them, so the
# writer drains the thread's buffer and every call is recorded: back-to-back runs of 200 000
# outran it and most records took the cheaper drop path (the traced trace's
# "dropped:" line says how many were).
cs=/sys/devices/system/clocksource/clocksource0
echo "clocksource: $(cat $cs/current_clocksource 2>&1) (available: $(cat $cs/available_clocksource 2>&1))"
# The traced loop writes new ring lines after each pause; a VM whose memory
# is slow after idle times itself, not the hook (docs/performance.md).
timeout "$limit" "$bin/write_after_idle" 50 2>&1
for mode in get_device stream_sync; do
  calls=10000
  [ $mode = stream_sync ] && calls=5000
  echo "plain:  $(timeout "$limit" "$bin/hooked_call_loop" $mode $calls 50 2>&1 | tail -1)"
  for setting in traced passthrough with-cupti; do
    envs=(LD_PRELOAD="$here/lib/libgpuscope.so" GPUSCOPE_OUTPUT="$out/overhead/")
    case $setting in
      passthrough) envs+=(GPUSCOPE_DISABLE=1) ;;
      with-cupti) envs+=(CUDA_INJECTION64_PATH="$here/lib/libgpuscope.so") ;;
    esac
    [ $setting = traced ] && envs+=(GPUSCOPE_OUTPUT="$out/overhead/loop-$mode.gpuscope")
    echo "$setting: $(timeout "$limit" env "${envs[@]}" "$bin/hooked_call_loop" $mode $calls 50 2>&1 | tail -1)"
  done
  # The driver calls the runtime's call made under the hook (each one passes
  # a driver-level hook too).
  "$gs" info "$out/overhead/loop-$mode.gpuscope" 2>&1 |
    sed -n '/^host clock:/p;/^dropped:/p;/nested calls/,/^[a-z]*:/{/^[a-z]*:/!p}' | sed 's/^ */    /'
done
for i in 1 2 3; do
  read -r _ p < <(run_timed "$out/launch.plain.log" "$bin/sync_bound" --fixed --iters 200000)
  read -r _ t < <(run_timed "$out/launch.traced.log" "$gs" run -o "$out/overhead/launch$i.gpuscope" -- \
    "$bin/sync_bound" --fixed --iters 200000)
  echo "launch-bound (sync_bound --fixed --iters 200000): plain $p s, traced $t s"
done
fi

# What each CUPTI setting costs a launch-bound run (callback_scope.h,
# docs/performance.md): the same run plain and traced under each setting,
# alternated, three pairs each; the ratio is traced/plain of the medians.
if want cupti_cost; then
  echo
  echo "## Launch cost by CUPTI setting (sync_bound --fixed --iters 200000)"
  echo "| setting | plain s (median) | traced s (median) | traced/plain | device records |"
  echo "|---|---|---|---|---|"
  cost_case() {
    local name=$1 ps=() ts=() p t i
    shift
    for i in 1 2 3; do
      read -r _ p < <(run_timed "$out/cost.plain.log" "$bin/sync_bound" --fixed --iters 200000)
      read -r _ t < <(run_timed "$out/cost.$name.log" env "$@" "$gs" run -q -o "$out/overhead/cost-$name.gpuscope" -f \
        -- "$bin/sync_bound" --fixed --iters 200000)
      ps+=("$p"); ts+=("$t")
    done
    p=$(median3 "${ps[@]}"); t=$(median3 "${ts[@]}")
    local dev
    dev=$("$gs" info "$out/overhead/cost-$name.gpuscope" 2>/dev/null | grep -m1 '^device:' | grep -oE '[0-9]+ kernels')
    echo "| $name | $p | $t | $(awk -v a="$p" -v b="$t" 'BEGIN{printf "%.3f", b/a}') | ${dev:-none} |"
  }
  mkdir -p "$out/overhead"
  cost_case default
  cost_case callbacks-all GPUSCOPE_CUPTI_CALLBACKS=all
  cost_case callbacks-none GPUSCOPE_CUPTI_CALLBACKS=none
  cost_case kernels-only GPUSCOPE_CUPTI_KINDS=none
  cost_case kernels-only-no-callbacks GPUSCOPE_CUPTI_KINDS=none GPUSCOPE_CUPTI_CALLBACKS=none
  cost_case cupti-off GPUSCOPE_CUPTI_KINDS=off
  cost_case sampled-20-of-2000ms GPUSCOPE_DEVICE_SAMPLING=20/2000
fi

# A PyTorch training step (issue 23): plain, under gpuscope run (default,
# and with --device-activity sampled) and under torch.profiler (CPU and CUDA
# activities, default settings), alternated, three runs each. Each run times
# 1000 steps after 30 warm-up ones, then 100000 torch.cuda.current_device()
# calls (torch makes ~400 cudaGetDevice calls a step: the hooked call's cost
# where it matters) and 20000 one-element add_ launches (a launch's host
# cost; medians of the three runs). Each run's figures are printed as it ends, so a lease
# that ends early still reports them; torch's import and first-step set-up
# take ~10 s of each run (run 3, docs/gpu-validation.md).
if want torch_cost && [ $torch = 1 ]; then
  echo
  echo "## PyTorch step: gpuscope against torch.profiler"
  cat >"$out/step_cost.py" <<'PY'
import sys, time, torch
mode = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(2048, 2048), torch.nn.GELU())],
                            torch.nn.Linear(2048, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 2048, device="cuda"); y = torch.randint(0, 10, (256,), device="cuda")
def step():
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    return loss
for _ in range(30): step()
torch.cuda.synchronize()
def timed(steps=1000):
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step()
        if i % 50 == 49: loss.item()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e3
def current_device_ns(calls=100000):
    t0 = time.perf_counter()
    for _ in range(calls): torch.cuda.current_device()
    return (time.perf_counter() - t0) / calls * 1e9
def launch_us(launches=20000):
    t = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches): t.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / launches * 1e6
def measure():
    return timed(), current_device_ns(), launch_us()
if mode == "torch_profiler":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        ms, ns, us = measure()
else:
    ms, ns, us = measure()
print(f"step_ms {ms:.4f}")
print(f"current_device_ns {ns:.1f}")
print(f"launch_us {us:.3f}")
PY
  figure() { grep -m1 "^$2 " "$1" | cut -d' ' -f2; }
  modes=(plain gpuscope gpuscope_sampled torch_profiler)
  declare -A steps=() calls=() launches=()
  for i in 1 2 3; do
    for m in "${modes[@]}"; do
      log=$out/step.$m.$i.log
      case $m in
        plain|torch_profiler) cmd=("$py" "$out/step_cost.py" "$m") ;;
        gpuscope) cmd=("$gs" run -q -o "$out/overhead/step$i.gpuscope" -f -- "$py" "$out/step_cost.py" plain) ;;
        gpuscope_sampled) cmd=("$gs" run -q --device-activity sampled -o "$out/overhead/step-sampled$i.gpuscope" -f \
          -- "$py" "$out/step_cost.py" plain) ;;
      esac
      read -r rc wall < <(run_timed "$log" "${cmd[@]}")
      steps[$m]+="$(figure "$log" step_ms) "; calls[$m]+="$(figure "$log" current_device_ns) "
      launches[$m]+="$(figure "$log" launch_us) "
      echo "run $i $m: exit $rc, $wall s, $(figure "$log" step_ms) ms per step," \
        "$(figure "$log" current_device_ns) ns per current_device(), $(figure "$log" launch_us) us per add_ launch"
    done
  done
  echo
  echo "| run | ms per step (3 runs) | median | against plain | ns per current_device() | us per add_ launch |"
  echo "|---|---|---|---|---|---|"
  base=$(median3 ${steps[plain]})
  for m in "${modes[@]}"; do
    med=$(median3 ${steps[$m]})
    echo "| $m | ${steps[$m]}| $med | $(awk -v a="$base" -v b="$med" 'BEGIN{if (a > 0) printf "%+.1f%%", (b/a-1)*100}') | $(median3 ${calls[$m]}) | $(median3 ${launches[$m]}) |"
  done
  # What a sampled trace judged: its windows and the verdict inside them.
  echo
  "$gs" analyze "$out/overhead/step-sampled1.gpuscope" 2>&1 | grep -m3 -E '^(device activity sampled|VERDICT)' |
    sed 's/^/    /'
fi

echo "logs and traces: $out"
