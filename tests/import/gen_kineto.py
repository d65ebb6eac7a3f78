#!/usr/bin/env python3
"""Writes PyTorch-profiler (Kineto) style traces with known answers.

Each workload is a training loop laid out the way torch.profiler records
one: ProfilerStep#N annotations, CPU operators and Python functions on the
main thread, cuda_runtime calls with correlation ids, and the device's
kernels, copies and memsets on streams. The timings are chosen so that the
verdict is not in doubt (docs/import.md, "Verdict cases"):

  input_bound     the DataLoader's __next__ holds the main thread 40 ms a
                  step while the GPU idles            -> cpu_bound
  input_only      the same with 5 us kernels: the DataLoader is 97 % of
                  the run                             -> cpu_bound
  healthy         kernels queued back to back, one sync a step -> healthy
  sync_heavy      a cudaStreamSynchronize after every short kernel -> sync_bound
  item_per_step   host work, kernels, then .item() each step: the wait
                  empties the queue and the GPU idles through the host
                  work                                -> sync_bound
  pageable_copies 64 MiB host-to-device copies from pageable memory -> pcie_bound

Variants: --spelling old (Runtime/Kernel/Memcpy/Operator categories, no
baseTimeNanoseconds), --rank R --world W (distributedInfo, NCCL kernels),
--sparse (fields left out: no dur on instants, pid/tid as strings, ints for
ts), --gzip. Usage: gen_kineto.py WORKLOAD OUT [options]
"""
import argparse
import gzip
import json
import sys

STREAM, NCCL_STREAM = 7, 20
PID = 4242


class Trace:
    def __init__(self, args):
        self.args = args
        self.events = []
        self.corr = 1000
        self.old = args.spelling == "old"
        # New Kineto writes epoch microseconds; old traces too, but an
        # importer must not care: start somewhere plausible either way.
        self.t0 = 1_700_000_000_000_000.0 if not self.old else 1_650_000_000_000_000.0

    def cat(self, new, old):
        return old if self.old else new

    def ev(self, ph, cat, name, ts, dur=None, pid=PID, tid=PID, args=None):
        e = {"ph": ph, "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(self.t0 + ts, 3)}
        if dur is not None:
            e["dur"] = round(dur, 3)
        if args:
            e["args"] = args
        if self.args.sparse:
            e["pid"], e["tid"] = str(e["pid"]), str(e["tid"])
            e["ts"] = int(e["ts"])
        self.events.append(e)

    def runtime(self, name, ts, dur):
        self.corr += 1
        self.ev("X", self.cat("cuda_runtime", "Runtime"), name, ts, dur,
                args={"cbid": 211, "correlation": self.corr, "external id": self.corr})
        return self.corr

    def kernel(self, name, ts, dur, corr, stream=STREAM):
        self.ev("X", self.cat("kernel", "Kernel"), name, ts, dur, pid=0, tid=stream,
                args={"queued": 0, "device": 0, "context": 1, "stream": stream, "correlation": corr,
                      "registers per thread": 32, "shared memory": 0, "grid": [132, 1, 1], "block": [256, 1, 1]})

    def launch(self, name, ts, host_us, gpu_start, gpu_us, stream=STREAM):
        corr = self.runtime("cudaLaunchKernel", ts, host_us)
        self.kernel(name, gpu_start, gpu_us, corr, stream)

    def copy(self, kind, ts, host_us, gpu_start, gpu_us, nbytes, api="cudaMemcpyAsync"):
        corr = self.runtime(api, ts, host_us)
        self.ev("X", self.cat("gpu_memcpy", "Memcpy"), f"Memcpy {kind}", gpu_start, gpu_us, pid=0, tid=STREAM,
                args={"device": 0, "context": 1, "stream": STREAM, "correlation": corr, "bytes": nbytes,
                      "memory bandwidth (GB/s)": round(nbytes / (gpu_us * 1e3), 3)})

    def sync(self, ts, dur):
        self.runtime("cudaStreamSynchronize", ts, dur)

    def op(self, name, ts, dur):
        self.ev("X", self.cat("cpu_op", "Operator"), name, ts, dur)

    def annotation(self, name, ts, dur):
        self.ev("X", self.cat("user_annotation", "cpu_op"), name, ts, dur)

    def document(self):
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045706752,
                                     "computeMajor": 9, "computeMinor": 0, "numSms": 132}]}
        if self.args.world:
            doc["distributedInfo"] = {"backend": "nccl", "rank": self.args.rank, "world_size": self.args.world}
        meta = [{"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": "python3"}},
                {"name": "thread_name", "ph": "M", "pid": PID, "tid": PID, "args": {"name": "thread 4242 (python3)"}},
                {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
        doc["traceEvents"] = self.events + meta
        doc["traceName"] = "generated.pt.trace.json"
        if not self.old:
            doc["baseTimeNanoseconds"] = 1_700_000_000_000_000_000
        return doc


def input_bound(t, steps, kernel_us=300):
    """40 ms a step in the DataLoader; 30 kernels of 0.3 ms after it."""
    now = 0.0
    for s in range(steps):
        step_start = now
        t.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", now, 40_000)
        t.ev("X", "python_function", "torch/utils/data/dataloader.py(628): __next__", now + 5, 39_990)
        now += 40_000
        t.copy("HtoD (Pinned -> Device)", now, 15, now + 10, 90, 1 << 20)
        now += 20
        gpu = now + 120
        for k in range(30):
            t.op("aten::linear", now, 12)
            t.launch(f"sm90_xmma_gemm_{k % 3}", now + 2, 8, gpu, kernel_us)
            gpu += kernel_us + 2
            now += 14
        t.sync(now, gpu - now + 5)
        now = gpu + 10
        t.annotation(f"ProfilerStep#{s}", step_start, now - step_start)
        now += 30
    return t


def input_only(t, steps):
    """The DataLoader and nearly nothing else: 30 kernels of 5 us a step,
    so its ranges cover over 90 % of the run (a real torch.profiler trace
    of such a loop, on an H200, once read as "no dominant bottleneck")."""
    return input_bound(t, steps, kernel_us=5)


def queue_kernels(t, now, gpu, op, kernels, kernel_us, delay, gap):
    """One launch every 10 us under OP, each kernel starting DELAY us after
    its launch or GAP us after the previous one ends, whichever is later.
    Returns the host's and the GPU's times after them."""
    for name in kernels:
        t.op(op, now, 9)
        start = max(gpu, now + delay)
        t.launch(name, now + 1, 7, start, kernel_us)
        gpu = start + kernel_us + gap
        now += 10
    return now, gpu


def healthy(t, steps):
    """50 kernels of 1 ms queued ahead; one synchronization a step."""
    now = 0.0
    for s in range(steps):
        step_start = now
        now, gpu = queue_kernels(t, now, now + 20, "aten::conv2d",
                                 [f"implicit_convolve_sgemm_{k % 4}" for k in range(50)], 1_000, delay=10, gap=2)
        t.sync(now, gpu - now + 4)
        now = gpu + 6
        t.annotation(f"ProfilerStep#{s}", step_start, now - step_start)
    return t


def sync_heavy(t, steps):
    """A short kernel, then a cudaStreamSynchronize, 400 times a step."""
    now = 0.0
    for s in range(steps):
        step_start = now
        for k in range(400):
            t.launch("vectorized_elementwise_kernel", now, 6, now + 8, 20)
            t.runtime("cudaStreamSynchronize", now + 7, 26)
            t.op("aten::item", now + 34, 20)
            now += 60
        t.annotation(f"ProfilerStep#{s}", step_start, now - step_start)
    return t


def item_per_step(t, steps):
    """2.5 ms of host work, 30 kernels of 100 us, then .item(): its
    cudaStreamSynchronize empties the GPU's queue every step, so the GPU
    idles through the next step's host work (host and GPU take turns)."""
    now = 0.0
    for s in range(steps):
        step_start = now
        t.op("aten::cat", now, 2_500)
        now += 2_500
        now, gpu = queue_kernels(t, now, now + 10, "aten::linear", [f"sm90_xmma_gemm_{k % 3}" for k in range(30)],
                                 100, delay=8, gap=1)
        t.op("aten::item", now, gpu - now + 12)
        t.copy("DtoH (Device -> Pageable)", now + 1, 6, gpu, 2, 4)
        t.sync(now + 8, gpu + 2 - now - 8 + 3)
        now = gpu + 15
        t.annotation(f"ProfilerStep#{s}", step_start, now - step_start)
    return t


def pageable_copies(t, steps):
    """A 64 MiB pageable host-to-device copy (5 ms) and 1 ms of kernels a step."""
    now = 0.0
    for s in range(steps):
        step_start = now
        t.op("aten::to", now, 5_030)
        t.copy("HtoD (Pageable -> Device)", now + 10, 5_010, now + 20, 5_000, 64 << 20)
        now += 5_040
        t.launch("elementwise_kernel", now, 6, now + 8, 1_000)
        t.sync(now + 8, 1_004)
        now += 1_020
        t.annotation(f"ProfilerStep#{s}", step_start, now - step_start)
    return t


def add_collectives(t):
    """Rank files carry an NCCL all-reduce per step on its own stream."""
    steps = [e for e in t.events if e["name"].startswith("ProfilerStep#")]
    for e in steps:
        end = float(e["ts"]) - t.t0 + float(e["dur"])
        t.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", end - 400, 6, end - 390, 350, NCCL_STREAM)


WORKLOADS = {"input_bound": input_bound, "input_only": input_only, "healthy": healthy, "sync_heavy": sync_heavy,
             "item_per_step": item_per_step, "pageable_copies": pageable_copies}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--spelling", choices=["new", "old"], default="new")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=0)
    p.add_argument("--sparse", action="store_true")
    p.add_argument("--gzip", action="store_true")
    args = p.parse_args()
    t = WORKLOADS[args.workload](Trace(args), args.steps)
    if args.world:
        add_collectives(t)
    text = json.dumps(t.document(), indent=1)
    opener = gzip.open if args.gzip else open
    with opener(args.out, "wt") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
