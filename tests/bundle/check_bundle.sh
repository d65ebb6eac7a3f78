#!/usr/bin/env bash
# Unpacks a bundle (scripts/bundle.sh) into an empty directory and uses it
# there with a clean environment, as on a GPU node where nothing can be
# installed: bin/gpuscope must need nothing but glibc and what the bundle ships, find its capture
# library by itself, and trace a sample (on the GPU if usable, else simgpu).
# Usage: tests/bundle/check_bundle.sh dist/gpuscope-*-linux-x86_64.tar.gz
set -euo pipefail
tarball=$(realpath "$1")
kineto=$(realpath "$(dirname "$0")/../real_gpu/h200-2026-12-04/torch_healthy.pt.trace.json.gz")
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-bundle-XXXXXX")
trap 'rm -rf "$dir"' EXIT
tar -C "$dir" -xzf "$tarball"
root=$(echo "$dir"/gpuscope-*)
fail() { echo "check_bundle: FAIL: $*" >&2; exit 1; }

# Every library bin/gpuscope and its importer module load is glibc's or the bundle's own.
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  case $name in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) continue ;; esac
  [ "$(realpath "$(dirname "$path")")" = "$(realpath "$root/lib")" ] || fail "bin/gpuscope takes $name from $path, not from the bundle"
done < <(env -i PATH=/usr/bin:/bin ldd "$root/bin/gpuscope" "$root/lib/libgpuscope_importers.so")
# CUPTI ships next to the capture library and needs nothing beyond glibc and libgcc_s.
[ -f "$root/lib/libcupti.so.13" ] || fail "lib/libcupti.so.13 is missing"
# (ldd's output is taken whole first: grep -q leaving early would end ldd by SIGPIPE.)
! grep -q 'not found' <<<"$(env -i PATH=/usr/bin:/bin ldd "$root/lib/libcupti.so.13")" || fail "libcupti.so.13 has unresolved dependencies"
# libunwind too (GPU images often lack it; without it, no call stacks).
[ -f "$root/lib/libunwind.so.8" ] || fail "lib/libunwind.so.8 is missing"
! grep -q 'not found' <<<"$(env -i PATH=/usr/bin:/bin ldd "$root/lib/libunwind.so.8")" || fail "libunwind.so.8 has unresolved dependencies"
# Its library path is the bundle's lib/ alone: an empty entry would be the
# current directory, where anyone's libz.so.1 would be loaded.
rpath=$(readelf -d "$root/bin/gpuscope" | sed -n 's/.*Library [a-z]*path: \[\(.*\)\]/\1/p')
[ "$rpath" = '$ORIGIN/../lib' ] || fail "bin/gpuscope's library path is '$rpath', not '\$ORIGIN/../lib'"
max_glibc=$(objdump -T "$root/bin/gpuscope" "$root/lib/libgpuscope.so" | grep -oE 'GLIBC_2\.[0-9]+' | sort -uV | tail -1)
[ "$(printf '%s\n' "$max_glibc" GLIBC_2.36 | sort -V | tail -1)" = GLIBC_2.36 ] || fail "needs $max_glibc (> 2.36)"

cd "$dir"
env -i PATH=/usr/bin:/bin HOME="$dir" "$root/samples/gpu-or-simgpu" "$root/samples" \
  "$root/bin/gpuscope" run -o "$dir/pcie.gpuscope" -- "$root/samples/bin/pcie_bound" --fixed \
  >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; fail "gpuscope run exited $?"; }
info=$(env -i PATH=/usr/bin:/bin "$root/bin/gpuscope" info "$dir/pcie.gpuscope")
grep -q '^events: .* 4002 copies, .* 8000 kernels' <<<"$info" || { echo "$info"; fail "unexpected counts"; }
grep -q '^dropped: *none' <<<"$info" || { echo "$info"; fail "events were dropped"; }
analysis=$(env -i PATH=/usr/bin:/bin "$root/bin/gpuscope" analyze "$dir/pcie.gpuscope")
grep -q '^VERDICT: ' <<<"$analysis" || { echo "$analysis"; fail "gpuscope analyze gave no verdict"; }
! grep -q 'libunwind.so.8 not loaded' <<<"$analysis" || { echo "$analysis"; fail "no call stacks from the bundle"; }
# libunwind itself (the bundle's, else the system's): the fast walker loads it only once a stack
# needs it (or 200 ms in), so a short run may never; walking every stack
# with it loads it at start, and without it stacks would be off.
env -i PATH=/usr/bin:/bin HOME="$dir" GPUSCOPE_UNWINDER=libunwind "$root/samples/gpu-or-simgpu" "$root/samples" \
  "$root/bin/gpuscope" run -o "$dir/libunwind.gpuscope" -- "$root/samples/bin/pcie_bound" --fixed \
  >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; fail "gpuscope run (GPUSCOPE_UNWINDER=libunwind) exited $?"; }
unwound=$(env -i PATH=/usr/bin:/bin "$root/bin/gpuscope" analyze "$dir/libunwind.gpuscope")
grep -q 'call stacks: .* symbolized' <<<"$unwound" && ! grep -q 'libunwind.so.8 not loaded' <<<"$unwound" \
  || { echo "$unwound"; fail "libunwind.so.8 (the bundle's, else the system's) does not load"; }
# A PyTorch profiler trace: the CLI loads the bundle's importer module on its own.
imported=$(env -i PATH=/usr/bin:/bin "$root/bin/gpuscope" analyze "$kineto" 2>&1) ||
  { echo "$imported"; fail "gpuscope analyze of a Kineto trace exited $?"; }
grep -q '^VERDICT: ' <<<"$imported" || { echo "$imported"; fail "no verdict for a Kineto trace"; }
# The conformance corpus runs from the bundle as gpu-check.sh runs it (here on simgpu).
for variant in "" --static; do
  env -i PATH=/usr/bin:/bin HOME="$dir" python3 "$root/conformance/conformance.py" --program vector_add $variant \
    --corpus "$root/conformance/bin" --gpuscope "$root/bin/gpuscope" --simgpu "$root/samples/simgpu/lib" \
    --nodes "$root/samples/simgpu/nodes" --work "$dir/conformance$variant" >"$dir/conformance.log" 2>&1 \
    || { cat "$dir/conformance.log"; fail "the conformance corpus fails from the bundle (vector_add $variant)"; }
done
# gpu-check.sh's loader section on simgpu: both programs exit 0 traced and
# plain alike, with the same output.
loader=$(env -i PATH=/usr/bin:/bin HOME="$dir" GPU_CHECK_SECTIONS=loader "$root/gpu-check.sh" --simgpu "$dir/gpu-check" 2>&1) ||
  { echo "$loader"; fail "gpu-check.sh --simgpu (loader) exited $?"; }
[ "$(grep -c '| 0/0 | yes | ' <<<"$loader")" = 2 ] || { echo "$loader"; fail "gpu-check.sh's loader rows differ from the plain runs"; }
echo "check_bundle: $(basename "$tarball") runs from an empty directory with a clean environment"
