"""Cost of a hooked CUDA call made from Python (docs/performance.md,
"Python frames"): N calls of cudaDeviceSynchronize through ctypes, DEPTH
Python frames below the loop; prints the best of 5 mean ns per call.

usage: python_sync_loop.py N [DEPTH]   (libcudart.so.13 from the library path)
"""
import ctypes, sys, time
rt = ctypes.CDLL("libcudart.so.13")
sync = rt.cudaDeviceSynchronize
def level(n, depth):
    if depth: return level(n, depth - 1)
    t = time.perf_counter_ns()
    for _ in range(n): sync()
    return (time.perf_counter_ns() - t) / n
sync()
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 10
print(f"{min(level(int(sys.argv[1]), depth) for _ in range(5)):.0f}")
