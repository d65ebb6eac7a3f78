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
  copies    "Direction Src->Dst[ async]" -> (count, bytes); device memory
            is "Device" whichever allocator it came from (a pool too)
  memsets   memory kind -> (count, bytes), likewise
  allocs    "Alloc Kind[ stream-ordered]", "Free[ stream-ordered]" ->
            (count, bytes): a free names no memory kind; the virtual
            memory API's physical allocations (cuMemCreate) end in
            " physical", their memory freed when released and unmapped
  kernels   kernel name (unmangled identifier) -> launches
  syncs     sync kind (Device, Stream, Event, StreamWaitEvent,
            StreamQuery, EventQuery) -> count
  captured  API function -> calls made while their stream was being
            captured into a graph: their work runs with the graph's
            launches, so they make no copy, memset or kernel record
  graphs    "launches" -> graph launches, and what they ran in all:
            "kernels", "copies", "memsets", "other nodes" -> count
            (counted per launch from the graph's nodes, without bytes)
A category left out must be empty in the trace.

Calls are counted as the program's binary makes them: cuda_runtime.h's C++
templates forward to other entry points (cudaMallocHost(T**, size) is
cudaHostAlloc, cudaOccupancyMaxActiveBlocksPerMultiprocessor is its
WithFlags form, cudaOccupancyMaxPotentialBlockSize is inline code), and
conformance.py checks that every function named here is one the program
imports.
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
                 syncs=None, captured=None, graphs=None, library_calls=False, entry_points=()):
        self.calls = calls or {}
        self.failures = failures or {}
        self.captured = captured or {}
        self.graphs = graphs or {}
        self.copies = copies or {}
        self.memsets = memsets or {}
        self.allocs = allocs or {}
        self.kernels = kernels or {}
        self.syncs = syncs or {}
        # cuBLAS and friends embed their own static cudart and call the
        # driver directly: their driver-level calls and the records they make
        # (their own kernels, say) are theirs, not the program's.
        self.library_calls = library_calls
        # Driver functions the program gets from cudaGetDriverEntryPoint*
        # rather than importing them (PyTorch's way): counted like imports.
        self.entry_points = set(entry_points)


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
    def __init__(self, name, args, node, libraries, expect):
        self.name, self.args, self.node, self.libraries, self.expect = name, args, node, libraries, expect


def program(args=(), node=None, libraries=()):
    """Registers an expectation function under its name; `node` is the simgpu
    node file (samples/simgpu/nodes) the program needs, `libraries` the
    corpus libraries it loads itself ("{exe}" is the program's file name)."""

    def register(f):
        PROGRAMS[f.__name__] = Program(f.__name__, list(args), node, list(libraries), f)
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


def allocated_and_freed(kinds, stream_ordered=False):
    """Allocations by memory kind ({kind: (count, bytes)}), each freed again."""
    suffix = " stream-ordered" if stream_ordered else ""
    allocs = {f"Alloc {kind}{suffix}": n for kind, n in kinds.items()}
    allocs[f"Free{suffix}"] = tuple(map(sum, zip(*kinds.values())))
    return allocs


def success_only(o):
    if o.status != EXIT_SUCCESS:
        o.unexpected()


def pair(count, each):
    """`count` records of `each` bytes: (count, bytes in all)."""
    return (count, count * each)


@program(args=["--n=50000"])
def vector_add(o):
    success_only(o)
    b = o.arg("n") * FLOAT
    return Expect(
        calls=merge({"cudaMalloc": 3, "cudaMemcpy": 4, "__cudaLaunchKernel": 1, "cudaGetLastError": 1, "cudaFree": 3},
                    results_check()),
        copies={"HostToDevice Pageable->Device": pair(2, b), "DeviceToHost Device->Pageable": pair(2, b)},
        allocs=allocated_and_freed({"Device": pair(3, b)}),
        kernels={"vectorAdd": 1})


@program(args=["--n=1048576"])
def async_api(o):
    success_only(o)
    b = o.arg("n") * INT
    # cudaEventQuery answers that were cudaErrorNotReady, in a bare loop: the
    # trace holds runs of them as single records and must count each poll.
    polls = o.number(r"CPU executed (\d+) polls")
    return Expect(
        calls=merge({"cudaHostAlloc": 1, "cudaMalloc": 1, "cudaMemset": 1, "cudaEventCreate": 2,
                     "cudaDeviceSynchronize": 1, "cudaEventRecord": 2, "cudaMemcpyAsync": 2, "__cudaLaunchKernel": 1,
                     "cudaEventQuery": polls + 1, "cudaEventElapsedTime": 1, "cudaEventDestroy": 2, "cudaFreeHost": 1,
                     "cudaFree": 1}, results_check()),
        failures={"cudaEventQuery": {cudaErrorNotReady: polls}} if polls else {},
        copies={"HostToDevice Pinned->Device async": pair(1, b), "DeviceToHost Device->Pinned async": pair(1, b)},
        memsets={"Device": pair(1, b)},
        allocs=allocated_and_freed({"Pinned": pair(1, b), "Device": pair(1, b)}),
        syncs={"Device": 1, "EventQuery": polls + 1},
        kernels={"increment_kernel": 1})


@program(args=["--n=1048576", "--streams=4", "--iters=5"])
def simple_streams(o):
    success_only(o)
    b, streams, iters = o.arg("n") * INT, o.arg("streams"), o.arg("iters")
    # One kernel alone, `iters` on the default stream, `iters` x `streams` on
    # the streams; the copies back follow the same pattern, plus one alone.
    kernels = 1 + iters + iters * streams
    return Expect(
        calls=merge({"cudaHostAlloc": 1, "cudaMalloc": 1, "cudaMemcpy": 1, "cudaStreamCreate": streams,
                     "cudaEventCreate": 2, "cudaEventRecord": 8, "cudaMemcpyAsync": kernels,
                     "__cudaLaunchKernel": kernels, "cudaGetLastError": 1, "cudaEventSynchronize": 4,
                     "cudaEventElapsedTime": 4, "cudaStreamDestroy": streams, "cudaEventDestroy": 2,
                     "cudaFreeHost": 1, "cudaFree": 1}, results_check()),
        copies={"HostToDevice Pinned->Device": pair(1, b),
                "DeviceToHost Device->Pinned async": (kernels, (1 + iters) * b + iters * b)},
        allocs=allocated_and_freed({"Pinned": pair(1, b), "Device": pair(1, b)}),
        syncs={"Event": 4},
        kernels={"init_array": kernels})


@program(args=["--n=262144", "--steps=12", "--reps=10"])
def multi_copy(o):
    success_only(o)
    sets = 4  # kSets in multi_copy.cu
    b, steps = o.arg("n") * INT, o.arg("steps")
    return Expect(
        calls=merge({"cudaHostAlloc": 2 * sets, "cudaMalloc": 2 * sets, "cudaStreamCreate": sets,
                     "cudaEventCreate": 2, "cudaEventRecord": 2, "cudaMemcpyAsync": 2 * steps,
                     "cudaMemsetAsync": steps, "__cudaLaunchKernel": steps, "cudaEventSynchronize": 1,
                     "cudaEventElapsedTime": 1, "cudaStreamDestroy": sets, "cudaFreeHost": 2 * sets,
                     "cudaFree": 2 * sets, "cudaEventDestroy": 2}, results_check()),
        copies={"HostToDevice Pinned->Device async": pair(steps, b),
                "DeviceToHost Device->Pinned async": pair(steps, b)},
        memsets={"Device": pair(steps, b)},
        allocs=allocated_and_freed({"Pinned": pair(2 * sets, b), "Device": pair(2 * sets, b)}),
        syncs={"Event": 1},
        kernels={"inc_kernel": steps})


@program(args=["--bytes=8388608", "--reps=5"])
def bandwidth_test(o):
    success_only(o)
    b, reps = o.arg("bytes"), o.arg("reps")
    # Five timed series (pageable up/down, pinned up/down, device to
    # device), then one check of the device-to-device result.
    return Expect(
        calls={"cudaHostAlloc": 2, "cudaMalloc": 2, "cudaEventCreate": 2, "cudaEventRecord": 10,
               "cudaEventSynchronize": 5, "cudaEventElapsedTime": 5, "cudaMemcpy": 3 * reps + 1,
               "cudaMemcpyAsync": 2 * reps, "cudaEventDestroy": 2, "cudaFreeHost": 2, "cudaFree": 2},
        copies={"HostToDevice Pageable->Device": pair(reps, b), "DeviceToHost Device->Pageable": pair(reps, b),
                "HostToDevice Pinned->Device async": pair(reps, b),
                "DeviceToHost Device->Pinned async": pair(reps, b),
                "DeviceToDevice Device->Device": pair(reps, b), "DeviceToHost Device->Pinned": pair(1, b)},
        allocs=allocated_and_freed({"Pinned": pair(2, b), "Device": pair(2, b)}),
        syncs={"Event": 5})


@program(args=["--workers=4", "--n=65536"])
def stream_callbacks(o):
    success_only(o)
    w, b = o.arg("workers"), o.arg("n") * INT
    return Expect(
        calls=merge({"cudaHostAlloc": w, "cudaMalloc": w, "cudaStreamCreate": w, "cudaMemcpyAsync": 2 * w,
                     "__cudaLaunchKernel": w, "cudaStreamAddCallback": w, "cudaLaunchHostFunc": w,
                     "cudaDeviceSynchronize": 1, "cudaStreamDestroy": w, "cudaFreeHost": w, "cudaFree": w},
                    results_check()),
        copies={"HostToDevice Pinned->Device async": pair(w, b), "DeviceToHost Device->Pinned async": pair(w, b)},
        allocs=allocated_and_freed({"Pinned": pair(w, b), "Device": pair(w, b)}),
        syncs={"Device": 1},
        kernels={"add_id": w})


@program(args=["--n=262144"])
def occupancy(o):
    success_only(o)
    b = o.arg("n") * INT
    # cudaOccupancyMaxPotentialBlockSize is inline code from cuda_runtime.h:
    # one cudaGetDevice, four cudaDeviceGetAttribute, one
    # cudaFuncGetAttributes, then one occupancy query per candidate block size
    # (warp-size steps down from the largest, stopping early at full
    # occupancy): 1 to 1024 / 32 of them. occupancy_of() makes two more.
    return Expect(
        calls={"cudaGetDevice": 2, "cudaGetDeviceProperties": 1, "cudaDeviceGetAttribute": 4,
               "cudaFuncGetAttributes": 1, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": (1 + 2, 32 + 2),
               "cudaMalloc": 1, "cudaMemcpy": 2,
               "__cudaLaunchKernel": 2, "cudaGetLastError": 2, "cudaDeviceSynchronize": 1, "cudaFree": 1},
        copies={"HostToDevice Pageable->Device": pair(1, b), "DeviceToHost Device->Pageable": pair(1, b)},
        allocs=allocated_and_freed({"Device": pair(1, b)}),
        syncs={"Device": 1},
        kernels={"square": 2})


@program(args=["--n=262144"])
def zero_copy(o):
    success_only(o)
    b = o.arg("n") * FLOAT
    return Expect(
        calls=merge({"cudaGetDevice": 1, "cudaGetDeviceProperties": 1, "cudaSetDeviceFlags": 1, "cudaHostAlloc": 3,
                     "cudaHostGetDevicePointer": 3, "__cudaLaunchKernel": 1, "cudaGetLastError": 1,
                     "cudaDeviceSynchronize": 1, "cudaFreeHost": 3}, results_check()),
        allocs=allocated_and_freed({"Pinned": pair(3, b)}),
        syncs={"Device": 1},
        kernels={"vector_add_mapped": 1})


@program(args=["--ha=320", "--wa=320", "--wb=640", "--iters=30"])
def matrix_mul(o):
    success_only(o)
    ha, wa, wb, iters = o.arg("ha"), o.arg("wa"), o.arg("wb"), o.arg("iters")
    ba, bb, bc = ha * wa * FLOAT, wa * wb * FLOAT, ha * wb * FLOAT
    return Expect(
        calls=merge({"cudaHostAlloc": 3, "cudaMalloc": 3, "cudaStreamCreateWithFlags": 1, "cudaEventCreate": 2,
                     "cudaMemcpyAsync": 3, "cudaMemsetAsync": 1, "__cudaLaunchKernel": 1 + iters,
                     "cudaGetLastError": 1, "cudaStreamSynchronize": 2, "cudaEventRecord": 2,
                     "cudaEventSynchronize": 1, "cudaEventElapsedTime": 1, "cudaEventDestroy": 2,
                     "cudaStreamDestroy": 1, "cudaFreeHost": 3, "cudaFree": 3}, results_check()),
        copies={"HostToDevice Pinned->Device async": (2, ba + bb), "DeviceToHost Device->Pinned async": (1, bc)},
        memsets={"Device": (1, bc)},
        allocs=allocated_and_freed({"Pinned": (3, ba + bb + bc), "Device": (3, ba + bb + bc)}),
        syncs={"Stream": 2, "Event": 1},
        kernels={"matrix_mul_tiled": 1 + iters})


@program()
def clock_timing(o):
    success_only(o)
    blocks, threads = 64, 256  # kBlocks, kThreads in clock_timing.cu
    b_in, b_out, b_timer = 2 * threads * FLOAT, blocks * FLOAT, 2 * blocks * 8
    return Expect(
        calls=merge({"cudaMalloc": 3, "cudaMemset": 1, "cudaMemcpy": 3, "__cudaLaunchKernel": 1,
                     "cudaGetLastError": 1, "cudaFree": 3}, results_check()),
        copies={"HostToDevice Pageable->Device": (1, b_in), "DeviceToHost Device->Pageable": (2, b_out + b_timer)},
        memsets={"Device": (1, b_timer)},
        allocs=allocated_and_freed({"Device": (3, b_in + b_out + b_timer)}),
        kernels={"timed_reduction": 1})


@program(args=["--blocks=64", "--threads=256"])
def atomics(o):
    success_only(o)
    b = 11 * INT  # kWords
    return Expect(
        calls=merge({"cudaMalloc": 1, "cudaMemcpy": 2, "__cudaLaunchKernel": 1, "cudaGetLastError": 1,
                     "cudaFree": 1}, results_check()),
        copies={"HostToDevice Pageable->Device": pair(1, b), "DeviceToHost Device->Pageable": pair(1, b)},
        allocs=allocated_and_freed({"Device": pair(1, b)}),
        kernels={"atomic_ops": 1})


@program(args=["--n=1048576", "--reps=20"], node="two-devices.json")
def p2p(o):
    if o.status == EXIT_WAIVED:
        devices = o.number(r"\[p2p\] (\d+) CUDA-capable")
        return Expect(calls={"cudaGetDeviceCount": 1, "cudaDeviceCanAccessPeer": 2 if devices >= 2 else 0})
    success_only(o)
    b, reps = o.arg("n") * FLOAT, o.arg("reps")
    # cudaMemcpyDefault between the GPUs is a peer copy; to and from the
    # pinned buffer it is a host copy.
    return Expect(
        calls=merge({"cudaGetDeviceCount": 1, "cudaDeviceCanAccessPeer": 2, "cudaSetDevice": 9,
                     "cudaDeviceEnablePeerAccess": 2, "cudaMalloc": 2, "cudaHostAlloc": 1, "cudaEventCreate": 2,
                     "cudaEventRecord": 2, "cudaMemcpy": reps + 2, "cudaEventSynchronize": 1,
                     "cudaEventElapsedTime": 1, "cudaMemcpyPeer": 1, "__cudaLaunchKernel": 2,
                     "cudaGetLastError": 2, "cudaDeviceSynchronize": 2, "cudaEventDestroy": 2,
                     "cudaDeviceDisablePeerAccess": 2, "cudaFreeHost": 1, "cudaFree": 2}, results_check()),
        copies={"PeerToPeer Device->Device": pair(reps + 1, b), "HostToDevice Pinned->Device": pair(1, b),
                "DeviceToHost Device->Pinned": pair(1, b)},
        allocs=allocated_and_freed({"Device": pair(2, b), "Pinned": pair(1, b)}),
        syncs={"Event": 1, "Device": 2},
        kernels={"double_from": 2})


@program(args=["--chunks=4", "--n=65536"], node="two-devices.json")
def omp_streams(o):
    success_only(o)
    c, b = o.arg("chunks"), o.arg("n") * INT
    return Expect(
        calls=merge({"cudaGetDeviceCount": 1, "cudaSetDevice": c + 1, "cudaStreamCreate": c, "cudaMalloc": c,
                     "cudaMemcpyAsync": 2 * c, "__cudaLaunchKernel": c, "cudaGetLastError": c,
                     "cudaStreamSynchronize": c, "cudaFree": c, "cudaStreamDestroy": c}, results_check()),
        copies={"HostToDevice Pageable->Device async": pair(c, b), "DeviceToHost Device->Pageable async": pair(c, b)},
        allocs=allocated_and_freed({"Device": pair(c, b)}),
        syncs={"Stream": c},
        kernels={"add_constant": c})


def graph_program(o, calls, graph_memsets=0, memsets_outside=0, captured=None):
    """graph_work.h around a program's own graph calls: GraphBuffers (two
    pinned and two device buffers of --n floats, a stream), 2 x --launches
    graph launches in two rounds (one stream synchronize each). Work is
    counted where it executes: each launch runs the graph's copy up, scale,
    offset and copy down (and `graph_memsets` memset nodes); a call captured
    into a graph or a node added to one executes nothing by itself."""
    success_only(o)
    b, runs = o.arg("n") * FLOAT, 2 * o.arg("launches")
    return Expect(
        calls=merge({"cudaHostAlloc": 2, "cudaMalloc": 2, "cudaStreamCreateWithFlags": 1, "cudaGraphInstantiate": 1,
                     "cudaGraphLaunch": runs, "cudaStreamSynchronize": 2, "cudaGraphExecDestroy": 1,
                     "cudaStreamDestroy": 1, "cudaFreeHost": 2, "cudaFree": 2}, results_check(), calls),
        captured=captured,
        graphs={"launches": runs, "kernels": 2 * runs, "copies": 2 * runs, "memsets": graph_memsets * runs},
        memsets={"Device": pair(memsets_outside, b)} if memsets_outside else {},
        allocs=allocated_and_freed({"Pinned": pair(2, b), "Device": pair(2, b)}),
        syncs={"Stream": 2})


@program(args=["--n=65536", "--launches=10"])
def graph_capture(o):
    # Two captures of copy, two kernels, copy; the output cleared once, outside.
    return graph_program(o, {"cudaMemset": 1, "cudaStreamBeginCapture": 2, "cudaMemcpyAsync": 4,
                             "__cudaLaunchKernel": 4, "cudaStreamEndCapture": 2, "cudaGraphGetNodes": 1,
                             "cudaGraphExecUpdate": 1, "cudaGraphDestroy": 2},
                         memsets_outside=1, captured={"cudaMemcpyAsync": 4, "__cudaLaunchKernel": 4})


@program(args=["--n=65536", "--launches=10"])
def graph_build(o):
    # Five nodes; the clear node runs with every launch.
    return graph_program(o, {"cudaGraphCreate": 1, "cudaGraphAddMemcpyNode1D": 2, "cudaGraphAddMemsetNode": 1,
                             "cudaGraphAddKernelNode": 2, "cudaGraphExecKernelNodeSetParams": 1,
                             "cudaGraphDestroy": 1},
                         graph_memsets=1)


@program()
def device_query(o):
    success_only(o)
    d = o.number(r"^Detected (\d+) CUDA Capable")
    return Expect(calls={"cudaGetDeviceCount": 1, "cudaSetDevice": d, "cudaGetDeviceProperties": d,
                         "cudaDriverGetVersion": d, "cudaRuntimeGetVersion": d, "cudaDeviceGetAttribute": 2 * d,
                         "cudaDeviceCanAccessPeer": d * (d - 1) if d >= 2 else 0})


@program(args=["--streams=32", "--us=1000"])
def hyperq(o):
    success_only(o)
    s = o.arg("streams")
    b = 2 * s * 8  # one long long per kernel
    return Expect(
        calls=merge({"cudaGetDevice": 1, "cudaDeviceGetAttribute": 1, "cudaMalloc": 1, "cudaMemset": 1,
                     "cudaStreamCreate": s, "cudaEventCreate": 2, "cudaEventRecord": 2,
                     "__cudaLaunchKernel": 2 * s + 1, "cudaGetLastError": 1, "cudaEventSynchronize": 1,
                     "cudaEventElapsedTime": 1, "cudaMemcpy": 1, "cudaStreamDestroy": s, "cudaEventDestroy": 2,
                     "cudaFree": 1}, results_check()),
        copies={"DeviceToHost Device->Pageable": (1, 8)},
        memsets={"Device": (1, b)},
        allocs=allocated_and_freed({"Device": (1, b)}),
        syncs={"Event": 1},
        kernels={"kernel_a": s, "kernel_b": s, "sum": 1})


@program(args=["--tasks=8", "--streams=4", "--n=65536"])
def um_streams(o):
    success_only(o)
    t, s, b = o.arg("tasks"), o.arg("streams"), o.arg("n") * FLOAT
    # Each task prefetches its buffer to the GPU and back: copy records
    # marked prefetch (managed at both ends, the range asked for).
    return Expect(
        calls=merge({"cudaGetDevice": 1, "cudaStreamCreate": s, "cudaMallocManaged": t,
                     "cudaStreamAttachMemAsync": t, "cudaStreamSynchronize": 2 * t, "cudaMemAdvise": t,
                     "cudaMemPrefetchAsync": 2 * t, "__cudaLaunchKernel": t, "cudaGetLastError": t, "cudaFree": t,
                     "cudaStreamDestroy": s}, results_check()),
        copies={"HostToDevice Managed->Managed async prefetch": pair(t, b),
                "DeviceToHost Managed->Managed async prefetch": pair(t, b)},
        allocs=allocated_and_freed({"Managed": pair(t, b)}),
        syncs={"Stream": 2 * t},
        kernels={"scale_in_place": t})


@program(args=["--n=65536", "--iters=20"])
def stream_ordered_alloc(o):
    success_only(o)
    b, k = o.arg("n") * FLOAT, o.arg("iters")
    return Expect(
        calls=merge({"cudaGetDevice": 1, "cudaDeviceGetAttribute": 1, "cudaDeviceGetDefaultMemPool": 1,
                     "cudaMemPoolSetAttribute": 1, "cudaHostAlloc": 3, "cudaStreamCreateWithFlags": 1,
                     "cudaMallocAsync": 3 * k, "cudaMemcpyAsync": 3 * k + 1, "__cudaLaunchKernel": k,
                     "cudaFreeAsync": 3 * k + 1, "cudaStreamSynchronize": 2, "cudaMemPoolCreate": 1,
                     "cudaMallocFromPoolAsync": 1, "cudaMemsetAsync": 1, "cudaMemPoolDestroy": 1,
                     "cudaStreamDestroy": 1, "cudaFreeHost": 3}, results_check()),
        copies={"HostToDevice Pinned->Device async": pair(2 * k, b),
                "DeviceToHost Device->Pinned async": pair(k + 1, b)},  # the last one from the own pool
        memsets={"Device": pair(1, b)},
        allocs={**allocated_and_freed({"Pinned": pair(3, b)}),
                **allocated_and_freed({"Device": pair(3 * k, b), "Pool": pair(1, b)}, stream_ordered=True)},
        syncs={"Stream": 2},
        kernels={"vector_add": k})


VMM_DRIVER = ("cuMemGetAllocationGranularity", "cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate",
              "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess")


@program(args=["--n=1000000", "--pages=4"])
def vmm_vector_add(o):
    success_only(o)
    n, pages = o.arg("n"), o.arg("pages")
    page = o.number(r"allocation granularity (\d+) bytes")
    b = n * FLOAT
    size = (b + page - 1) // page * page
    # Three buffers, each its own reservation and physical allocation, and
    # `pages` physical pages of one growing segment, cleared after each step.
    physical = (3 + pages, 3 * size + pages * page)
    return Expect(
        calls=merge({"cudaSetDevice": 1, "cudaGetDriverEntryPointByVersion": len(VMM_DRIVER),
                     "cuMemGetAllocationGranularity": 1, "cuMemAddressReserve": 4, "cuMemAddressFree": 4,
                     "cuMemCreate": 3 + pages, "cuMemMap": 3 + pages, "cuMemSetAccess": 3 + pages,
                     "cuMemRelease": 3 + pages, "cuMemUnmap": 3 + pages, "cudaMemcpy": 5, "cudaMemset": pages,
                     "__cudaLaunchKernel": 1, "cudaGetLastError": 1}, results_check()),
        entry_points=VMM_DRIVER,
        copies={"HostToDevice Pageable->Device": pair(2, b),
                "DeviceToHost Device->Pageable": (3, 2 * b + pages * page)},
        memsets={"Device": (pages, page * pages * (pages + 1) // 2)},
        allocs={"Alloc Device physical": physical, "Free physical": physical},
        kernels={"vectorAdd": 1})


@program(args=["--width=1000", "--height=300", "--depth=20"])
def pitch_copies(o):
    success_only(o)
    w, h, d = o.arg("width"), o.arg("height"), o.arg("depth")
    pitch2, pitch3 = o.number(r"^2D pitch: (\d+) bytes"), o.number(r"^3D pitch: (\d+) bytes")
    # Copies and memsets move width x height (x depth) bytes; allocations
    # hold pitch x height (x depth).
    return Expect(
        calls={"cudaMallocPitch": 1, "cudaMemset2D": 1, "cudaMemcpy2D": 3, "cudaMalloc3D": 1, "cudaMemset3D": 1,
               "cudaMemcpy3D": 2, "cudaFree": 2},
        copies={"DeviceToHost Device->Pageable": (3, 2 * w * h + w * h * d),
                "HostToDevice Pageable->Device": (2, w * h + w * h * d)},
        memsets={"Device": (2, w * h + w * h * d)},
        allocs=allocated_and_freed({"Device": (2, pitch2 * h + pitch3 * h * d)}))


@program(args=["--width=512", "--height=256"])
def simple_texture(o):
    success_only(o)
    b = o.arg("width") * o.arg("height") * FLOAT
    # cudaCreateChannelDesc<float>() is the runtime's cudaCreateChannelDesc;
    # the image goes into the array once and comes out of the array and of
    # the kernel's output once each.
    return Expect(
        calls=merge({"cudaCreateChannelDesc": 1, "cudaMallocArray": 1, "cudaMemcpy2DToArray": 1,
                     "cudaCreateTextureObject": 1, "cudaMalloc": 1, "__cudaLaunchKernel": 1, "cudaGetLastError": 1,
                     "cudaDeviceSynchronize": 1, "cudaMemcpy": 1, "cudaMemcpy2DFromArray": 1,
                     "cudaDestroyTextureObject": 1, "cudaFree": 1, "cudaFreeArray": 1}, results_check()),
        copies={"HostToDevice Pageable->Device": pair(1, b), "DeviceToHost Device->Pageable": pair(2, b)},
        allocs=allocated_and_freed({"Array": pair(1, b), "Device": pair(1, b)}),
        syncs={"Device": 1},
        kernels={"mirror_kernel": 1})


@program(args=["--n=262144", "--radius=8"])
def constant_filter(o):
    success_only(o)
    b, t = o.arg("n") * FLOAT, (2 * o.arg("radius") + 1) * FLOAT
    # The taps go to __constant__ memory and back (symbol copies), the
    # signal up and the result back (cudaMemcpy).
    return Expect(
        calls=merge({"cudaMemcpyToSymbol": 1, "cudaMemcpyFromSymbol": 1, "cudaMalloc": 2, "cudaMemcpy": 2,
                     "__cudaLaunchKernel": 1, "cudaGetLastError": 1, "cudaDeviceSynchronize": 1, "cudaFree": 2},
                    results_check()),
        copies={"HostToDevice Pageable->Device": (2, t + b), "DeviceToHost Device->Pageable": (2, t + b)},
        allocs=allocated_and_freed({"Device": pair(2, b)}),
        syncs={"Device": 1},
        kernels={"convolve": 1})


def gemm(o):
    """gemm.cu: uploads two n x n matrices, then cuBLAS; on simgpu cuBLAS
    cannot initialize (its static runtime needs the driver's private export
    tables, docs/interception.md) and the program ends there with
    EXIT_FAILURE. cuBLAS's own driver calls and kernels are not the
    program's (library_calls)."""
    b = o.arg("n") ** 2 * FLOAT
    uploads = {"cudaMalloc": 3, "cudaMemcpy": 2}
    if o.simulated and o.status == EXIT_FAILURE and "cuBLAS could not be initialized" in o.stdout:
        return Expect(calls=uploads, copies={"HostToDevice Pageable->Device": pair(2, b)},
                      allocs={"Alloc Device": pair(3, b)}, library_calls=True)
    success_only(o)
    return Expect(
        calls=merge(uploads, {"cudaMemcpy": 1, "cudaFree": 3}),
        copies={"HostToDevice Pageable->Device": pair(2, b), "DeviceToHost Device->Pageable": pair(1, b)},
        allocs=allocated_and_freed({"Device": pair(3, b)}), library_calls=True)


@program(args=["--n=256"])
def cublas_gemm(o):
    return gemm(o)


@program(args=["--n=256"], libraries=["lib{exe}_gemm.so"])
def cublas_plugin(o):
    return gemm(o)


@program(args=["--workers=4", "--bytes=1048576"])
def worker_errors(o):
    """Every worker's small allocation succeeds and its 1 PiB one fails
    before any of them exits (a barrier in between); then each one that gets
    to it prints its error (cudaGetErrorName) and calls exit(EXIT_FAILURE).
    Nothing is freed."""
    if o.status != EXIT_FAILURE:
        o.unexpected()
    w, b = o.arg("workers"), o.arg("bytes")
    return Expect(calls={"cudaSetDevice": w + 1, "cudaMalloc": 2 * w, "cudaGetErrorName": (1, w)},
                  failures={"cudaMalloc": {cudaErrorMemoryAllocation: w}},
                  allocs={"Alloc Device": pair(w, b)})
