"""gpuscope, installed with pip: the CLI and its capture library, in this package.

The `gpuscope` console script runs main(), which replaces the Python process
with the packaged bin/gpuscope: arguments, exit status and signals pass
through exactly as when the binary is run directly.
"""
import os
import signal
import sys

# The wheel's install tree (packaging/CMakeLists.txt): bin/gpuscope finds
# lib/libgpuscope.so next to it by itself.
_ROOT = os.path.dirname(os.path.abspath(__file__))
EXECUTABLE = os.path.join(_ROOT, "bin", "gpuscope")

# Python ignores these at start-up, and an ignored signal stays ignored
# across exec: without this the CLI, and the program it traces, would
# inherit a SIGPIPE that no longer kills them.
_PYTHON_IGNORED = ("SIGPIPE", "SIGXFSZ")


def main():
    for name in _PYTHON_IGNORED:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(EXECUTABLE, ["gpuscope", *sys.argv[1:]])
    except OSError as error:
        sys.stderr.write(f"gpuscope: error: cannot run {EXECUTABLE}: {error.strerror}\n")
        return 2
