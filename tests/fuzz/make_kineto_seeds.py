#!/usr/bin/env python3
"""Seeds for the Kineto import fuzz target: small traces from
tests/import/gen_kineto.py (each category in both spellings, a rank with
NCCL kernels, sparse fields, gzip), cut down to their first events so that
the replay's 2000 mutations per seed stay fast under the sanitizers; the
gzip one only truncated.

Usage: make_kineto_seeds.py GEN_KINETO OUT_DIR
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

# name: (gen_kineto.py arguments, events kept, indent)
SEEDS = {
    "input_bound.json": (["input_bound", "--steps", "1"], 24, None),
    "healthy_old_rank1.json": (["healthy", "--steps", "1", "--spelling", "old", "--rank", "1", "--world", "2"], 16, 1),
    "pageable_sparse.json.gz": (["pageable_copies", "--steps", "2", "--sparse", "--gzip"], 12, None),
}


def small_trace(gen, args, keep):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        subprocess.run([sys.executable, gen, args[0], path] + [a for a in args[1:] if a != "--gzip"], check=True)
        with open(path) as f:
            doc = json.load(f)
    events = doc["traceEvents"]
    doc["traceEvents"] = [e for e in events if e.get("ph") != "M"][:keep] + [e for e in events if e.get("ph") == "M"]
    return doc


def main(argv):
    gen, out = argv[1], argv[2]
    os.makedirs(out, exist_ok=True)
    for name, (args, keep, indent) in SEEDS.items():
        text = json.dumps(small_trace(gen, args, keep), indent=indent).encode()
        data = gzip.compress(text, mtime=0) if "--gzip" in args else text
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        if name == "pageable_sparse.json.gz":  # only the truncated copy: the replay cuts the others
            os.remove(os.path.join(out, name))
            with open(os.path.join(out, "truncated_" + name), "wb") as f:
                f.write(data[:len(data) * 2 // 3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
