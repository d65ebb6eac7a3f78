#!/usr/bin/env python3
"""Seeds for fuzz_baseline: `gpuscope doctor --json` documents of the shapes a
baseline takes (one GPU, several, MIG and NVLink facts, a newer gpuscope's
unknown facts, no GPUs), plus near-misses a person might pass by mistake
(another JSON document, a value of the wrong type, a cut-off file).

Usage: make_baseline_seeds.py OUT_DIR
"""
import json
import os
import sys


def gpu(index, **extra):
    facts = {"index": index, "name": "NVIDIA H200", "uuid": "GPU-%08x-0000-4000-8000-000000000000" % index,
             "bus_id": "00000000:%02X:00.0" % (0x18 + index), "vbios": "96.00.99.00.01", "memory": "143771 MiB",
             "pcie_link_max": "Gen5 x16", "mig_mode": "disabled", "persistence_mode": "enabled",
             "power_limit": "700 W", "applications_clocks": "SM 1980 MHz, memory 3201 MHz",
             "max_clocks": "SM 1980 MHz, memory 3201 MHz"}
    facts.update(extra)
    return facts


NODE = {"kernel": "6.8.0-45-generic", "driver": "580.82.07", "cuda_driver": "13.0", "cuda_runtime": "13.0",
        "cuda_runtime_library": "/usr/local/cuda/lib64/libcudart.so.13", "gpu_count": "1"}


def document(node, gpus, **extra):
    doc = {"gpuscope_version": "0.1.0", "simulated": False, "exit_status": 0,
           "counts": {"fail": 0, "warn": 0, "not_checked": 0, "pass": 16}, "checks": [],
           "facts": {"node": node, "gpus": gpus}}
    doc.update(extra)
    return doc


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "one-gpu.json": document(NODE, [gpu(0)]),
        "eight-gpus.json": document(dict(NODE, gpu_count="8"), [gpu(i, nvlinks_active="18 of 18") for i in range(8)]),
        "mig.json": document(NODE, [gpu(0, mig_mode="enabled", mig_devices="1g.18gb x2, 3g.71gb")]),
        "newer.json": document(dict(NODE, future_fact="x"), [gpu(0, future_gpu_fact="y")]),
        "no-gpus.json": document({"kernel": "6.8.0"}, []),
        "not-doctor.json": {"traceEvents": []},
        "wrong-type.json": document(NODE, [gpu(0, memory=143771)]),
    }
    for name, doc in seeds.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, indent=2)
    with open(os.path.join(out, "cut.json"), "w") as f:
        f.write(json.dumps(seeds["one-gpu.json"], indent=2)[:300])


if __name__ == "__main__":
    main()
