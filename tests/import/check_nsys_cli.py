#!/usr/bin/env python3
"""End to end: `gpuscope analyze` on a generated Nsight Systems export.

  check_nsys_cli.py GPUSCOPE FILE verdict CLASS   the verdict class is CLASS
                                                  (device records used: busy
                                                  from CUPTI, not NVML)
  check_nsys_cli.py GPUSCOPE FILE error TEXT      exit status 2, one line on
                                                  stderr naming FILE and TEXT
"""
import json
import subprocess
import sys


def main(argv):
    gpuscope, path, mode, expected = argv[1:5]
    run = subprocess.run([gpuscope, "analyze", "--json", path], capture_output=True, text=True, timeout=120)
    if mode == "error":
        lines = run.stderr.strip().splitlines()
        ok = run.returncode == 2 and len(lines) == 1 and path in lines[0] and expected in lines[0]
        if not ok:
            print(f"expected exit 2 and one line naming {path} and '{expected}'; got {run.returncode}:\n{run.stderr}")
        return 0 if ok else 1
    if run.returncode != 0:
        print(f"exit {run.returncode}\n{run.stderr}")
        return 1
    doc = json.loads(run.stdout)
    got = doc["verdict"]["class"]
    if got != expected:
        print(f"verdict {got}, expected {expected}\n" + json.dumps(doc["verdict"], indent=1) + "\n" +
              json.dumps(doc["findings"], indent=1)[:4000] + "\n" + "\n".join(doc.get("coverage", [])))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
