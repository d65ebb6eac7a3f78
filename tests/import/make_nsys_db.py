#!/usr/bin/env python3
"""Writes Nsight Systems-like SQLite exports (`nsys export --type sqlite`)
for the importer's tests and fuzz seeds, with the tables and columns
NVIDIA's export documentation describes, in two layouts:

  new  the 2024-era layout (export schema 3.x): CUDA runtime and driver
       tables, kernels with demangled/short/mangled StringIds names,
       memcpy/memset with memory kinds, synchronization records, NVTX with
       textId and domains, PROCESSES, ThreadNames, TARGET_INFO_GPU and
       TARGET_INFO_CUDA_DEVICE, ENUM_* tables, META_DATA_EXPORT, MPI_RANKS.
  old  an older, leaner layout: no driver table, no ENUM_* or META_DATA_*
       tables, no PROCESSES, no TARGET_INFO_CUDA_DEVICE (GPUs numbered by
       TARGET_INFO_GPU.id), kernels named by shortName only, NVTX text inline
       in `text` (no textId, no domains), memsets without memKind.

Workloads (timestamps in ns from the capture's start, as nsys writes them):
  healthy        kernels back to back, the host queueing ahead
  sync_heavy     cudaStreamSynchronize after each kernel, host work between:
                 the GPU idles ~55 % of the time
  pageable       cudaMemcpy host-to-device from pageable memory dominating
  multiprocess   two processes: 5001 busy (healthy), 5002 lighter (sync-heavy)

Bad inputs: not_sqlite, other_tool (SQLite with unrelated tables),
missing_column (a kernel table without `end`), truncated (a database cut
short), no_process (nsys tables with no rows).

Rows are inserted out of time order on purpose (nsys does not promise an
order): the importer must sort. Output is deterministic.

Usage: make_nsys_db.py OUTDIR [--seeds]
  --seeds: three small exports (512-byte pages, a few iterations) for the fuzz corpus
"""
import os
import sqlite3
import sys

PID = 4242
MACHINE = 1 << 48  # the part of a globalTid above the pid: must be masked off

RUNTIME = {
    "launch": "cudaLaunchKernel_v7000",
    "sync": "cudaStreamSynchronize_v3020",
    "device_sync": "cudaDeviceSynchronize_v3020",
    "memcpy": "cudaMemcpy_v3020",
    "memcpy_async": "cudaMemcpyAsync_v3020",
    "memset": "cudaMemsetAsync_v3020",
    "malloc": "cudaMalloc_v3020",
    "free": "cudaFree_v3020",
}
COPY_HTOD, COPY_DTOH = 1, 2
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE = 0, 1, 2
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_MARK, NVTX_DOMAIN_CREATE = 59, 60, 34, 75


def global_tid(pid, tid):
    return MACHINE | (pid << 24) | tid


def global_pid(pid):
    return MACHINE | (pid << 24)


class Trace:
    """Events of one or more processes, before they become rows."""

    def __init__(self):
        self.strings = {}
        self.runtime, self.driver, self.kernels, self.copies, self.memsets = [], [], [], [], []
        self.syncs, self.nvtx = [], []
        self.correlation = 0

    def sid(self, text):
        return self.strings.setdefault(text, len(self.strings) + 1)

    def call(self, pid, tid, what, start, end, ret=0):
        self.correlation += 1
        self.runtime.append((start, end, global_tid(pid, tid), self.correlation, RUNTIME[what], ret))
        return self.correlation

    def kernel(self, pid, corr, start, end, name, stream=7):
        self.kernels.append((start, end, pid, stream, corr, name))

    def copy(self, pid, corr, start, end, nbytes, kind, src, dst, stream=7):
        self.copies.append((start, end, pid, stream, corr, nbytes, kind, src, dst))

    def range(self, pid, tid, start, end, text, kind=NVTX_PUSHPOP, domain=0):
        self.nvtx.append((start, end, kind, text, global_tid(pid, tid), domain))


KERNELS = ["_Z6gemm_fPfS_S_i", "_Z11relu_kernelPfi"]
SHORT_NAMES = {"_Z6gemm_fPfS_S_i": "gemm_f", "_Z11relu_kernelPfi": "relu_kernel"}


def setup(t, pid, tid, now):
    """cudaMalloc, a memset and the domain of the process's ranges."""
    c = t.call(pid, tid, "malloc", now, now + 300_000)
    now += 310_000
    c = t.call(pid, tid, "memset", now, now + 6_000)
    t.memsets.append((now + 8_000, now + 20_000, pid, 7, c, 1 << 20, 0))
    t.nvtx.append((now, None, NVTX_DOMAIN_CREATE, "training", global_tid(pid, tid), 1))
    t.nvtx.append((now + 1_000, None, NVTX_MARK, "ready", global_tid(pid, tid), 0))
    return now + 30_000


def teardown(t, pid, tid, now, gpu_free):
    c = t.call(pid, tid, "device_sync", now, max(now + 3_000, gpu_free + 5_000))
    now = max(now + 3_000, gpu_free + 5_000) + 2_000
    t.call(pid, tid, "free", now, now + 40_000)
    return now + 50_000


def healthy(t, pid, tid, iterations, now=1_000_000):
    """The host queues a 1.0 ms kernel every 0.91 ms: the GPU never waits."""
    now = setup(t, pid, tid, now)
    loop_start, gpu_free = now, now
    for i in range(iterations):
        t.range(pid, tid, now, now + 905_000, "step")
        now += 895_000  # host work between launches
        c = t.call(pid, tid, "launch", now, now + 8_000)
        start = max(now + 6_000, gpu_free)
        t.kernel(pid, c, start, start + 1_000_000, KERNELS[i % 2])
        gpu_free = start + 1_000_000
        now += 15_000
    t.range(pid, tid, loop_start, now, "epoch", NVTX_STARTEND, domain=1)
    return teardown(t, pid, tid, now, gpu_free)


def sync_heavy(t, pid, tid, iterations, now=1_000_000):
    """Launch, wait for the kernel, then 1.2 ms of host work: GPU busy ~45 %."""
    now = setup(t, pid, tid, now)
    for i in range(iterations):
        step_start = now
        c = t.call(pid, tid, "launch", now, now + 8_000)
        start = now + 10_000
        t.kernel(pid, c, start, start + 1_000_000, KERNELS[i % 2])
        now += 9_000
        c = t.call(pid, tid, "sync", now, start + 1_000_000 + 12_000)
        t.syncs.append((now, start + 1_000_000 + 10_000, pid, 7, c, 3))
        now = start + 1_000_000 + 13_000 + 1_200_000
        t.range(pid, tid, step_start, now, "step")
    return teardown(t, pid, tid, now, now)


def pageable(t, pid, tid, iterations, now=1_000_000):
    """4 MiB synchronous host-to-device copies from pageable memory."""
    now = setup(t, pid, tid, now)
    for i in range(iterations):
        c = t.call(pid, tid, "memcpy", now, now + 1_500_000)
        t.copy(pid, c, now + 150_000, now + 1_450_000, 4 << 20, COPY_HTOD, MEM_PAGEABLE, MEM_DEVICE)
        now += 1_510_000
        c = t.call(pid, tid, "launch", now, now + 8_000)
        t.kernel(pid, c, now + 10_000, now + 210_000, KERNELS[i % 2])
        now += 9_000
        c = t.call(pid, tid, "memcpy", now, now + 260_000)
        t.copy(pid, c, now + 205_000, now + 245_000, 64 << 10, COPY_DTOH, MEM_DEVICE, MEM_PAGEABLE)
        now += 270_000 + 300_000
    return teardown(t, pid, tid, now, now)


NEW_TABLES = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, uuid TEXT, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT,
  numMultiprocessors INTEGER);
CREATE TABLE MPI_RANKS (globalTid INTEGER NOT NULL, rank INTEGER NOT NULL);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
  gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER,
  dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
  migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER,
  threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
"""

OLD_TABLES = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  shortName INTEGER NOT NULL, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER);
"""

COPY_KIND_NAMES = ["UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA", "ATOD", "DTOA", "DTOD", "HTOH", "PTOP"]
MEM_KIND_NAMES = ["PAGEABLE", "PINNED", "DEVICE", "ARRAY", "MANAGED", "DEVICE_STATIC", "MANAGED_STATIC", "UNKNOWN"]


def out_of_order(rows):
    """Each run of 16 rows reversed: near time order, as exports are, but never sorted."""
    out = []
    for i in range(0, len(rows), 16):
        out.extend(reversed(rows[i:i + 16]))
    return out


def write_metadata(db, t, layout, pids):
    db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1764633600000000000, '2025-12-02', '')")
    for pid in pids:
        db.execute("INSERT INTO ThreadNames VALUES (?, 0, ?)", (t.sid(f"trainer-{pid}"), global_tid(pid, pid)))
    if layout == "old":
        db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0', 1, 0, "
                   "85899345920, 0, 0, 132)")
        return
    db.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
                   [("EXPORT_PRODUCT_VERSION", "2024.6.2.225"), ("EXPORT_SCHEMA_VERSION", "3.16.1")])
    db.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)",
                   [(i, "CUDA_MEMCPY_KIND_" + n, n) for i, n in enumerate(COPY_KIND_NAMES)])
    db.executemany("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?, ?, ?)",
                   [(i, "CUDA_MEMOPR_MEMORY_KIND_" + n, n.title()) for i, n in enumerate(MEM_KIND_NAMES)])
    # GPU 1 is the one the processes see as CUDA device 0 (CUDA_VISIBLE_DEVICES=1).
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA A100-SXM4-40GB', '0000:07:00.0', 1, 0, "
               "42949672960, 0, 0, 108, 'GPU-aaaa', 'GA100', 0, 8, 0)")
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 1, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0', 1, 0, "
               "85899345920, 0, 0, 132, 'GPU-bbbb', 'GH100', 1, 9, 0)")
    for pid in pids:
        db.execute("INSERT INTO PROCESSES VALUES (?, ?, ?)", (global_pid(pid), pid, f"/opt/train/bin/train_{pid}"))
        db.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 0, ?, 'GPU-bbbb', 132)", (pid,))
        db.execute("INSERT INTO MPI_RANKS VALUES (?, ?)", (global_tid(pid, pid), pids.index(pid)))


def write_events(db, t, layout):
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
                   "returnValue) VALUES (?, ?, 1, ?, ?, ?, ?)",
                   [(s, e, g, c, t.sid(n), r) for s, e, g, c, n, r in out_of_order(t.runtime)])
    for s, e, pid, stream, c, name in out_of_order(t.kernels):
        short = t.sid(SHORT_NAMES[name])
        if layout == "new":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, NULL, ?, ?, ?, ?, ?, ?, 0, 0, 32, "
                       "1024, 1, 1, 256, 1, 1, 0, 4096, 0, 0, ?, 0, 0, 0)",
                       (s, e, stream, c, global_pid(pid), t.sid(name + "(demangled)"), short, t.sid(name), c))
        else:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, ?, ?, 32, 1024, 1, 1, 256, "
                       "1, 1, 0, 4096, 0, 0, ?)", (s, e, stream, c, global_pid(pid), short, c))
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
                   "globalPid, bytes, copyKind, srcKind, dstKind) VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, ?, ?)",
                   [(s, e, st, c, global_pid(p), b, k, sk, dk) for s, e, p, st, c, b, k, sk, dk in t.copies])
    memset_columns = "value, bytes" + (", memKind" if layout == "new" else "")
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, "
                   f"globalPid, {memset_columns}) VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?{', ?' if layout == 'new' else ''})",
                   [(s, e, st, c, global_pid(p), v, b) + ((MEM_DEVICE,) if layout == "new" else ())
                    for s, e, p, st, c, b, v in t.memsets])
    write_nvtx(db, t, layout)
    if layout == "new":
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, NULL, ?, ?, ?, ?, 0)",
                       [(s, e, st, c, global_pid(p), ty) for s, e, p, st, c, ty in t.syncs])


def write_nvtx(db, t, layout):
    for s, e, kind, text, gtid, domain in out_of_order(t.nvtx):
        if layout == "old":
            if kind != NVTX_DOMAIN_CREATE and domain == 0:
                db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, ?, ?, ?)",
                           (s, e, kind, text, gtid))
        elif kind == NVTX_DOMAIN_CREATE:
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (s, e, kind, text, gtid, domain))
        else:
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (s, e, kind, gtid, t.sid(text), domain))


def write_db(path, t, layout, pids, page_size=4096):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA page_size = {page_size}")
    db.execute("PRAGMA journal_mode = OFF")
    db.executescript(NEW_TABLES if layout == "new" else OLD_TABLES)
    write_metadata(db, t, layout, pids)
    write_events(db, t, layout)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in t.strings.items()])
    db.commit()
    db.close()


def workload(name, iterations):
    t = Trace()
    if name == "multiprocess":
        healthy(t, 5001, 5001, iterations)
        sync_heavy(t, 5002, 5002, max(iterations // 3, 20), now=1_500_000)
        return t, [5001, 5002]
    {"healthy": healthy, "sync_heavy": sync_heavy, "pageable": pageable}[name](t, PID, PID, iterations)
    if name == "healthy":  # a driver call of the application's own, and one the runtime made inside its launch
        c = t.call(PID, PID, "launch", 50, 60)
        t.runtime.pop()
        t.driver.append((500_000, 500_300, global_tid(PID, PID), c, "cuCtxGetCurrent", 0))
        first = min(r for r in t.runtime if r[4] == RUNTIME["launch"])
        t.driver.append((first[0] + 1_000, first[1] - 1_000, first[2], first[3], "cuLaunchKernel", 0))
    return t, [PID]


def write_driver(path, t):
    if not t.driver:
        return
    db = sqlite3.connect(path)
    for s, e, g, c, n, r in t.driver:
        sid = db.execute("SELECT id FROM StringIds WHERE value = ?", (n,)).fetchone()
        if sid is None:
            sid = (db.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0],)
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (sid[0], n))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (?, ?, 1, ?, ?, ?, ?, NULL)", (s, e, g, c, sid[0], r))
    db.commit()
    db.close()


def write_bad_inputs(out):
    with open(os.path.join(out, "not_sqlite.sqlite"), "w") as f:
        f.write("this is a text file, not a database\n" * 64)
    path = os.path.join(out, "other_tool.sqlite")
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'a');"
                     "CREATE TABLE orders (id INTEGER, user INTEGER, start INTEGER, end INTEGER);")
    db.close()
    for name, edit in (("missing_column", "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN end"),
                       ("no_process", "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME; DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;"
                                      "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;"
                                      "DELETE FROM CUPTI_ACTIVITY_KIND_DRIVER; VACUUM;")):
        path = os.path.join(out, name + ".sqlite")
        t, pids = workload("sync_heavy", 20)
        write_db(path, t, "new", pids)
        db = sqlite3.connect(path)
        db.executescript(edit)
        db.close()
    with open(os.path.join(out, "new_sync_heavy.sqlite"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.sqlite"), "wb") as f:
        f.write(data[:len(data) * 6 // 10])


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out, seeds = argv[1], "--seeds" in argv
    os.makedirs(out, exist_ok=True)
    sizes = {"healthy": 600, "sync_heavy": 400, "pageable": 400, "multiprocess": 300}
    for layout in ("new", "old"):
        for name, iterations in sizes.items():
            if layout == "old" and name == "multiprocess":
                continue
            if seeds and f"{layout}_{name}" not in ("new_healthy", "new_multiprocess", "old_pageable"):
                continue
            t, pids = workload(name, 6 if seeds else iterations)
            path = os.path.join(out, f"{layout}_{name}.sqlite")
            write_db(path, t, layout, pids, 512 if seeds else 4096)
            if layout == "new":
                write_driver(path, t)
    if not seeds:
        write_bad_inputs(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
