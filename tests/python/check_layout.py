#!/usr/bin/env python3
"""Compares gpuscope's built-in CPython layout with the offsets a version's
own headers give (layout_offsets.c built against them): every field the
headers print must equal the table's. usage: check_layout.py DUMP PROBE"""
import subprocess
import sys


def read(command):
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


def main():
    dump, probe = sys.argv[1:]
    headers = read([probe])
    table = read([dump, str(headers["minor"])])
    wrong = {k: (v, table.get(k)) for k, v in headers.items() if table.get(k) != v}
    if wrong:
        sys.exit("FAIL: 3.%d: " % headers["minor"] + ", ".join(
            f"{k}: headers say {h}, gpuscope's table {t}" for k, (h, t) in sorted(wrong.items())))
    print(f"ok: 3.{headers['minor']}: {len(headers) - 1} offsets agree with the headers")


if __name__ == "__main__":
    main()
