#!/usr/bin/env python3
"""Seeds for fuzz_python_lines: real line tables of the interpreter running
this script, as tests/python/dump_line_tables.py dumps them, in the fuzz
target's input layout (version byte, index, first line, table).

Usage: make_python_lines_seeds.py DUMP_LINE_TABLES_PY OUT_DIR
"""
import os
import struct
import subprocess
import sys

MAX_SEEDS = 40


def main():
    dumper, out_dir = sys.argv[1], sys.argv[2]
    text = subprocess.run([sys.executable, "-I", dumper], check=True, capture_output=True, text=True).stdout
    records = [line.split("\t") for line in text.splitlines()]
    minor = int(records[0][1], 16) >> 16 & 0xFF
    codes = [r for r in records[1:] if r[0] == "code"]
    step = max(1, len(codes) // MAX_SEEDS)
    os.makedirs(out_dir, exist_ok=True)
    for number, (_, _, first_line, table, lines) in enumerate(codes[::step][:MAX_SEEDS]):
        units = len(lines.split(","))
        header = struct.pack("<BHi", (minor - 9) % 5, units // 2, int(first_line))
        with open(os.path.join(out_dir, "table-%d.bin" % number), "wb") as f:
            f.write(header + bytes.fromhex(table))


if __name__ == "__main__":
    main()
