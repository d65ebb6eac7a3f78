#!/usr/bin/env bash
# Installs gpuscope's build and test dependencies from Debian packages, only
# those that are missing. Idempotent; runs apt-get update only when it must
# install something. Works as root on a fresh Debian 12 machine (uses sudo
# otherwise, when available).
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  ccache                            # scripts/test.sh: the pip wheel reuses the regular build's objects
  libfmt-dev                        # messages in the CLI and analyzer
  libflatbuffers-dev flatbuffers-compiler   # trace chunks (flatc runs at build time)
  libunwind-dev                     # call stacks in the traced process
  libzstd-dev                       # frame compression
  libdw-dev                         # offline symbolization
  libsimdjson-dev zlib1g-dev        # importing PyTorch profiler (Kineto) JSON, plain or gzip
  libcli11-dev                      # command line
  libsqlite3-dev                    # Nsight Systems SQLite exports (gpuscope import/analyze)
  nlohmann-json3-dev                # simgpu node descriptions, JSON reports
  libprotobuf-dev protobuf-compiler # export --format perfetto: Perfetto's protobuf trace (protoc runs at build time)
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  python3 python3-jsonschema        # small test helpers; the --json schema check
  python3-pip                       # installs lizard (below)
  chromium                          # renders the HTML report in tests/report (headless, --no-sandbox as root)
  help2man                          # the man page, generated from the CLI's own --help at build time
  lintian                           # tests/packaging: the .deb checked against Debian policy
  zsh                               # tests/packaging: the generated zsh completion parses and completes
  bash-completion                   # tests/packaging: loads the wheel's bash completion from a venv on demand
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ $status != *'install ok installed'* ]]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
      echo "install-deps: missing ${missing[*]} and not root (no sudo)" >&2; exit 1; fi
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# lizard measures function lengths for the structure check (tests/CMakeLists.txt,
# scripts/check_structure.py); it is not packaged by Debian, so it comes from
# PyPI, for the python3 that CMake finds first on PATH.
if ! python3 -c "import lizard" 2>/dev/null; then
  echo "install-deps: installing lizard (PyPI)"
  python3 -m pip install --quiet --user lizard==1.24.3 2>/dev/null ||
    python3 -m pip install --quiet lizard==1.24.3 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages lizard==1.24.3
fi
