#!/usr/bin/env bash
# Unpacks a bundle (scripts/bundle.sh) into an empty directory and uses it
# there with a clean environment, as on a GPU node where nothing can be
# installed: bin/gpuscope must need nothing but glibc, find its capture
# library by itself, and trace a sample (on the GPU if usable, else simgpu).
# Usage: tests/bundle/check_bundle.sh dist/gpuscope-*-linux-x86_64.tar.gz
set -euo pipefail
tarball=$(realpath "$1")
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-bundle-XXXXXX")
trap 'rm -rf "$dir"' EXIT
tar -C "$dir" -xzf "$tarball"
root=$(echo "$dir"/gpuscope-*)
fail() { echo "check_bundle: FAIL: $*" >&2; exit 1; }

needed=$(readelf -d "$root/bin/gpuscope" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort | paste -sd' ')
[ "$needed" = "ld-linux-x86-64.so.2 libc.so.6" ] || fail "bin/gpuscope needs more than glibc: $needed"
max_glibc=$(objdump -T "$root/bin/gpuscope" "$root/lib/libgpuscope.so" | grep -oE 'GLIBC_2\.[0-9]+' | sort -uV | tail -1)
[ "$(printf '%s\n' "$max_glibc" GLIBC_2.36 | sort -V | tail -1)" = GLIBC_2.36 ] || fail "needs $max_glibc (> 2.36)"

cd "$dir"
env -i PATH=/usr/bin:/bin HOME="$dir" "$root/samples/gpu-or-simgpu" "$root/samples" \
  "$root/bin/gpuscope" run -o "$dir/pcie.gpuscope" -- "$root/samples/bin/pcie_bound" --fixed \
  >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; fail "gpuscope run exited $?"; }
info=$(env -i PATH=/usr/bin:/bin "$root/bin/gpuscope" info "$dir/pcie.gpuscope")
grep -q '^events: .* 4002 copies, .* 8000 kernels' <<<"$info" || { echo "$info"; fail "unexpected counts"; }
grep -q '^dropped: *none' <<<"$info" || { echo "$info"; fail "events were dropped"; }
echo "check_bundle: $(basename "$tarball") runs from an empty directory with a clean environment"
