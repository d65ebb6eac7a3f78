"""What each conformance program does, derived from its own parameters.

One function per program (programs/NAME.cu), registered with @program: the
arguments it runs with, the simgpu node it needs, and from the outcome of
its plain run (exit status, stdout) the calls and records its trace must
hold. Every figure is computed here from the program's arguments and
source, never from a trace: when gpuscope disagrees, the test fails.

Keys, as conformance.py's Tally builds them from `gpuscope export --format csv`:
  calls     API function -> count of outermost calls (an int, or (lo, hi)
            for a count the scheduler decides). List every CUDA call the
            program makes; one that the libgpuscope.so under test does not
            intercept (not among its exports) is reported, not compared.
  failures  API function -> {error code: count}; every other call succeeds.
  copies    "Direction Src->Dst[ async]" -> (count, bytes)
  memsets   memory kind -> (count, bytes)
  allocs    "Op Kind[ stream-ordered]" -> (count, bytes)
  kernels   kernel name (unmangled identifier) -> launches
  syncs     sync kind (Device, Stream, Event, StreamWaitEvent,
            StreamQuery, EventQuery) -> count
A category left out must be empty in the trace.
"""
import re

PROGRAMS = {}

FLOAT = 4
INT = 4
EXIT_SUCCESS, EXIT_FAILURE, EXIT_WAIVED = 0, 1, 2

# CUDA error codes the programs expect to see.
cudaErrorMemoryAllocation = 2
cudaErrorNotReady = 600


class Expect:
    def __init__(self, calls=None, failures=None, copies=None, memsets=None, allocs=None, kernels=None,
                 syncs=None, library_calls=False):
        self.calls = calls or {}
        self.failures = failures or {}
        self.copies = copies or {}
        self.memsets = memsets or {}
        self.allocs = allocs or {}
        self.kernels = kernels or {}
        self.syncs = syncs or {}
        # cuBLAS and friends embed their own static cudart and call the
        # driver directly: their driver-level calls and the records they make
        # (their own kernels, say) are theirs, not the program's.
        self.library_calls = library_calls


class Outcome:
    """The plain run: what the expectation may depend on besides the arguments."""

    def __init__(self, status, stdout, args, simulated):
        self.status = status
        self.stdout = stdout
        self.args = args
        self.simulated = simulated

    def arg(self, name):
        for a in self.args:
            if a.startswith(f"--{name}="):
                return int(a.split("=", 1)[1], 0)
        raise KeyError(f"--{name} is not among the program's arguments {self.args}")

    def number(self, pattern):
        """A count the program printed about itself (how often it polled, how
        many devices it saw): the first group of `pattern` in its stdout."""
        m = re.search(pattern, self.stdout, re.M)
        if not m:
            raise KeyError(f"the program's stdout has no /{pattern}/")
        return int(m.group(1))

    def unexpected(self):
        raise AssertionError(f"the plain run ended with status {self.status}, for which there is no expectation")


class Program:
    def __init__(self, name, args, node, expect):
        self.name, self.args, self.node, self.expect = name, args, node, expect


def program(args=(), node=None):
    """Registers an expectation function under its name; `node` is the simgpu
    node file (samples/simgpu/nodes) the program needs."""

    def register(f):
        PROGRAMS[f.__name__] = Program(f.__name__, list(args), node, f)
        return f

    return register


def results_check():
    """conformance::kernel_results_checkable(): one cudaGetDevice and one
    cudaGetDeviceProperties."""
    return {"cudaGetDevice": 1, "cudaGetDeviceProperties": 1}


def merge(*dicts):
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


@program(args=["--n=50000"])
def vector_add(o):
    if o.status != EXIT_SUCCESS:
        o.unexpected()
    n = o.arg("n")
    b = n * FLOAT
    return Expect(
        calls=merge({"cudaMalloc": 3, "cudaMemcpy": 4, "__cudaLaunchKernel": 1, "cudaGetLastError": 1, "cudaFree": 3},
                    results_check()),
        copies={"HostToDevice Pageable->Device": (2, 2 * b), "DeviceToHost Device->Pageable": (2, 2 * b)},
        allocs={"Alloc Device": (3, 3 * b), "Free Device": (3, 3 * b)},
        kernels={"vectorAdd": 1})
