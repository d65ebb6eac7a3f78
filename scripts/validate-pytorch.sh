#!/usr/bin/env bash
# PyTorch under gpuscope, for real (docs/pytorch.md): outside CI, it
# downloads torch (~3 GB with its CUDA libraries) into a throwaway venv.
#   1. a small training script where no GPU is usable (no driver on this
#      machine; on a GPU machine CUDA_VISIBLE_DEVICES= hides the GPUs):
#      expect the silent-CPU-fallback verdict, the fix saying
#      torch.cuda.is_available() was False and what failed;
#   2. when a GPU is usable, the same script with a .item() per step and
#      pageable inputs: expect the sync named as `.item()` and the copies as
#      `.to('cuda')` from pageable memory, at train.py's lines.
# Prints one markdown table (check, expected, got, result); exit 1 if a
# check failed, 2 if the set-up failed. Record the results in
# docs/gpu-validation.md.
# Usage: scripts/validate-pytorch.sh [--gpuscope PATH] [--python PYTHON] [--torch SPEC] [WORKDIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gs=$root/build/bin/gpuscope
py=python3
torch_spec=torch
while [ $# -gt 0 ]; do
  case $1 in
    --gpuscope) gs=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --torch) torch_spec=$2; shift 2 ;;
    -*) echo "usage: $0 [--gpuscope PATH] [--python PYTHON] [--torch SPEC] [WORKDIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/validate-pytorch-XXXXXX")}
mkdir -p "$work"
[ -x "$gs" ] || { echo "validate-pytorch: no gpuscope at $gs (build it, or pass --gpuscope)" >&2; exit 2; }

venv=$work/venv
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv" || { echo "validate-pytorch: $py -m venv failed" >&2; exit 2; }
fi
if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  echo "installing $torch_spec into $venv (a few GB) ..." >&2
  "$venv/bin/pip" install --quiet "$torch_spec" numpy > "$work/pip.log" 2>&1 ||
    { echo "validate-pytorch: pip install $torch_spec failed (log: $work/pip.log)" >&2; tail -5 "$work/pip.log" >&2; exit 2; }
fi
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')

cat > "$work/train.py" <<'EOF'
# A small training loop: --item reads the loss every step, --pageable
# copies every batch from ordinary (pageable) host memory.
import sys
import torch

item = "--item" in sys.argv
pageable = "--pageable" in sys.argv
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(256, 512), torch.randint(0, 10, (256,))) for _ in range(8)]
if not pageable:
    batches = [(x.pin_memory(), y.pin_memory()) if device == "cuda" else (x, y) for x, y in batches]
total = 0.0
for step in range(300):
    x, y = batches[step % len(batches)]
    x = x.to(device, non_blocking=not pageable)
    y = y.to(device, non_blocking=not pageable)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if item:
        total += loss.item()
print(f"device={device} steps=300 total={total:.3f}")
EOF

rows=()
failed=0
# check NAME EXPECTED ANALYSIS_JSON PYTHON_CONDITION: PYTHON_CONDITION is
# evaluated with `doc` (the analysis) and `text` (all findings' evidence and fixes).
# The conditions are Python, quoted so that the shell leaves them alone.
check() {
  local name=$1 expected=$2 json=$3 cond=$4 got
  got=$("$venv/bin/python" - "$json" "$cond" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
text = " ".join(" ".join(f["evidence"]) + " " + f["fix"] for f in doc["findings"])
ok = eval(sys.argv[2])
fix = next((f["fix"] for f in doc["findings"]), "")
print(("PASS" if ok else "FAIL") + "\t" + doc["verdict"]["class"] + ": " + fix[:200].replace("|", "/"))
EOF
)
  [ -n "$got" ] || got=$'FAIL\tno analysis'
  [ "${got%%$'\t'*}" = PASS ] || failed=1
  rows+=("| $name | $expected | ${got#*$'\t'} | ${got%%$'\t'*} |")
}

# One traced run: its trace directory analyzed as JSON into $work/NAME.json.
traced() {
  local name=$1; shift
  rm -rf "${work:?}/$name"
  (cd "$work" && env "$@") > "$work/$name.out" 2>&1
  "$gs" analyze --json "$work/$name/" > "$work/$name.all.json" 2> "$work/$name.err"
  # The training process's trace: the python one (a directory may hold helpers' too).
  "$venv/bin/python" - "$work/$name.all.json" > "$work/$name.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
traces = doc.get("traces", [doc])
best = max(traces, key=lambda t: (t["verdict"]["class"] != "no_cuda_work", len(t["findings"])))
json.dump(best, sys.stdout)
EOF
}

gpu=0
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then gpu=1; fi
if [ $gpu = 1 ]; then
  traced fallback CUDA_VISIBLE_DEVICES= "$gs" run -q -o "$work/fallback/" -- "$venv/bin/python" train.py
  check "no usable GPU (CUDA_VISIBLE_DEVICES=)" "cpu_fallback; is_available() was False" "$work/fallback.json" \
    'doc["verdict"]["class"] == "cpu_fallback" and "torch.cuda.is_available() was False" in text'
  traced habits "$gs" run -q -o "$work/habits/" -- "$venv/bin/python" train.py --item --pageable
  # shellcheck disable=SC2016  # Python's backquotes, not the shell's
  check ".item() per step" "\`.item()\` at train.py:LINE" "$work/habits.json" \
    '"`.item()` at " in text and "train.py:" in text'
  check "pageable .to('cuda')" "\`.to('cuda')\` from pageable memory" "$work/habits.json" \
    "\"from pageable memory: DataLoader(pin_memory=True)\" in text"
else
  traced fallback "$gs" run -q -o "$work/fallback/" -- "$venv/bin/python" train.py
  check "no driver" "cpu_fallback; is_available() was False: <what failed>" "$work/fallback.json" \
    'doc["verdict"]["class"] == "cpu_fallback" and "torch.cuda.is_available() was False" in text'
  rows+=("| .item() per step, pageable .to('cuda') | needs a GPU | not run: no GPU | SKIP |")
fi

echo "# validate-pytorch $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): torch $torch_version, gpuscope $("$gs" --version 2>&1 | head -1)"
echo
echo "| check | expected | got | result |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "traces, analyses and logs: $work"
exit $failed
