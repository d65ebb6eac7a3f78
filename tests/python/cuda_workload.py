"""CUDA calls from Python through ctypes, for gpuscope's Python-stack tests.

Runs against whatever libcudart.so.13 the library path finds (simgpu in
the tests). Each call that a test looks for carries a `# site: NAME`
comment; check_python_stacks.py finds its line there, so the expected
file:line is never written twice.

usage: cuda_workload.py MODE NATIVE_LIBRARY
  copies    pageable copies from a loop in a function
  sync      a synchronize inside a nested function, waiting for kernels
            that the native library (libpykernels.so) queued
  threads   copies from the threads of a thread pool
  callback  a synchronize from a Python callback that the native library calls
"""
import concurrent.futures
import ctypes
import sys

CUDA = ctypes.CDLL("libcudart.so.13")
SIZE = 1 << 20
STEPS = 100  # enough for a verdict (0.2 s) on simgpu
CUDA_MEMCPY_HOST_TO_DEVICE = 1


def device_buffer():
    pointer = ctypes.c_void_p()
    if CUDA.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(SIZE)) != 0:
        sys.exit("cudaMalloc failed")
    return pointer


def copy_batches(device, host, count):
    for _ in range(count):
        CUDA.cudaMemcpy(device, host, ctypes.c_size_t(SIZE), CUDA_MEMCPY_HOST_TO_DEVICE)  # site: copy


def wait_for_device():
    CUDA.cudaDeviceSynchronize()  # site: sync


def training_step(kernels):
    if kernels.queue_work(4) != 0:  # site: queue
        sys.exit("queue_work failed")
    wait_for_device()


def copies(_):
    # As worker() below: enough copying that the copies outweigh the
    # interpreter's start-up on a loaded machine (200 left a CPU-bound verdict
    # and no copy finding under CI's parallel tests).
    copy_batches(device_buffer(), ctypes.create_string_buffer(SIZE), 500)


def sync(kernels):
    for _ in range(STEPS):
        training_step(kernels)


def worker(device):
    host = ctypes.create_string_buffer(SIZE)
    # Enough copying that the copies outweigh the interpreter's start-up
    # even on a loaded machine: the check needs their finding.
    for _ in range(500):
        CUDA.cudaMemcpy(device, host, ctypes.c_size_t(SIZE), CUDA_MEMCPY_HOST_TO_DEVICE)  # site: thread


def threads(_):
    device = device_buffer()
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        for future in [pool.submit(worker, device) for _ in range(3)]:
            future.result()


def callback(kernels):
    prototype = ctypes.CFUNCTYPE(ctypes.c_int)

    def on_event():
        kernels.queue_work(4)  # site: callback_queue
        return CUDA.cudaDeviceSynchronize()  # site: callback

    handler = prototype(on_event)
    for _ in range(STEPS):
        kernels.run_callback(handler)  # site: native_caller


if __name__ == "__main__":
    modes = {"copies": copies, "sync": sync, "threads": threads, "callback": callback}
    modes[sys.argv[1]](ctypes.CDLL(sys.argv[2]))
