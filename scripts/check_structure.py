#!/usr/bin/env python3
"""Checks the structure docs/architecture.md draws, so that a change that
breaks it fails a test instead of waiting for a review:

  * arrows: a file in one part may include headers of the parts its arrows
    allow (ALLOWED below), never another's; protocol/ (linked into the
    preloaded library) includes system headers only besides;
  * the run contract: no GPUSCOPE_* name in a string literal of product
    code outside protocol/ (they are constants in protocol/environment.h,
    so that the CLI and the library cannot drift apart);
  * size: no product source file over 500 lines;
  * functions: no product function over 60 lines (lizard measures them).

Includes are written without folders ("recorder.h") and found through the
include directories, so a header is named by its file name: found next to
the including file first, else anywhere in the tree. A name found in
several parts is allowed when one of them is.

Usage: scripts/check_structure.py [ROOT]   (exit 1 with one line per breach)
"""
import os
import re
import subprocess
import sys

# The parts, by the folder they live in (longest prefix wins), and the
# parts each may include. Everything outside these folders (tests, docs,
# scripts, the build) may include anything and is not measured.
PARTS = {
    "schemas": "schemas",
    "protocol": "protocol",
    "capture": "capture",
    "cupti": "cupti",
    "preload": "preload",
    "analyzer": "analyzer",
    "analyzer/import": "import",
    "samples": "samples",
}
ALLOWED = {
    "schemas": set(),
    "protocol": {"schemas"},
    "capture": {"schemas", "protocol"},
    "cupti": {"capture", "schemas"},
    "preload": {"capture", "cupti", "protocol", "schemas"},
    "analyzer": {"schemas", "protocol", "import"},
    # Importers write the trace format as the capture writes it (its chunk
    # builder and frame encoder), and classify calls as the analyzer does.
    "import": {"schemas", "protocol", "capture", "analyzer"},
    "samples": set(),  # simgpu and the workloads use nothing of the product
}
PRODUCT = ("schemas", "protocol", "capture", "cupti", "preload", "analyzer", "import")
SOURCE = re.compile(r"\.(h|hpp|cpp|cc|cu|cuh|h\.in)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
PROTOCOL_SYSTEM_DIRS = ("sys/", "linux/", "netinet/", "arpa/", "net/")
# A name, not a part of one (the HTML report's __GPUSCOPE_DATA__ placeholder).
ENV_NAME = re.compile(r"(?<![A-Za-z0-9_])GPUSCOPE_[A-Z0-9]")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60


def part_of(rel):
    best = None
    for folder in PARTS:
        if (rel == folder or rel.startswith(folder + "/")) and (best is None or len(folder) > len(best)):
            best = folder
    return PARTS.get(best) if best else None


def source_files(root):
    for part_dir in (p for p in PARTS if "/" not in p):  # sub-parts are walked with their parent
        for base, dirs, files in os.walk(os.path.join(root, part_dir)):
            dirs[:] = [d for d in dirs if not d.startswith("build")]
            for f in files:
                if SOURCE.search(f):
                    yield os.path.relpath(os.path.join(base, f), root)


def index_by_name(files):
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    return by_name


def include_breaches(root, files, by_name):
    out = []
    for rel in files:
        part = part_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            if os.path.exists(os.path.join(root, os.path.dirname(rel), name)):
                continue  # next to the including file: its own part
            targets = {part_of(t) for t in by_name.get(os.path.basename(name), [])
                       if t.endswith(name)}
            targets.discard(None)
            if not targets or part in targets:
                continue  # a system, generated or third-party header, or its own part
            if not targets & ALLOWED[part]:
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{rel}:{line}: {part} may not include \"{name}\" "
                           f"(from {', '.join(sorted(targets))}; docs/architecture.md)")
    return out


def string_literals(text):
    """(line, contents) of each string literal, comments skipped."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c == "'" and text[i - 1:i].isdigit():  # a digit separator: 60'000
            i += 1
        elif c == "'":  # a character literal ('"' is no string)
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1 if j < n and text[j] == "'" else j
        elif c == "R" and text.startswith('R"', i) and not (text[i - 1:i].isalnum() or text[i - 1:i] == "_"):
            open_paren = text.find("(", i + 2)
            closing = ")" + text[i + 2:open_paren] + '"'
            end = text.find(closing, open_paren)
            end = n if end < 0 else end + len(closing)
            yield line, text[open_paren + 1:end]
            line += text.count("\n", i, end)
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            yield line, text[i + 1:j]
            i = j + 1 if j < n and text[j] == '"' else j
        else:
            i += 1


def contract_breaches(root, files):
    out = []
    for rel in files:
        part = part_of(rel)
        if part not in PRODUCT:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        if part == "protocol":
            for m in SYSTEM_INCLUDE.finditer(text):
                if "/" in m.group(1) and not m.group(1).startswith(PROTOCOL_SYSTEM_DIRS):
                    line = text.count("\n", 0, m.start()) + 1
                    out.append(f"{rel}:{line}: protocol/ includes <{m.group(1)}>: it uses system headers only")
            continue
        for line, literal in string_literals(text):
            if ENV_NAME.search(literal):
                out.append(f"{rel}:{line}: a GPUSCOPE_* name in a string literal (\"{literal[:60]}\"): "
                           "use its constant from protocol/environment.h")
    return out


def size_breaches(root, files):
    out = []
    for rel in files:
        if part_of(rel) not in PRODUCT:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > MAX_FILE_LINES:
            out.append(f"{rel}: {n} lines (at most {MAX_FILE_LINES})")
    return out


def function_breaches(root, files):
    product = [os.path.join(root, f) for f in files if part_of(f) in PRODUCT]
    cmd = [sys.executable, "-m", "lizard", "--warnings_only", "-L", str(MAX_FUNCTION_LINES),
           "-C", "100000", "-a", "100000"] + product
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        return [f"lizard could not run ({e}); scripts/install-deps.sh installs it"]
    if run.returncode not in (0, 1) or "No module named" in run.stderr:
        return [f"lizard failed: {run.stderr.strip() or run.returncode}; scripts/install-deps.sh installs it"]
    out = []
    for line in run.stdout.splitlines():
        m = re.match(r"(.+?):(\d+): warning: (\S+) has .* (\d+) length", line)
        if m:
            out.append(f"{os.path.relpath(m.group(1), root)}:{m.group(2)}: {m.group(3)} is "
                       f"{m.group(4)} lines (at most {MAX_FUNCTION_LINES})")
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = sorted(source_files(root))
    breaches = include_breaches(root, files, index_by_name(files))
    breaches += contract_breaches(root, files)
    breaches += size_breaches(root, files)
    breaches += function_breaches(root, files)
    for b in breaches:
        print(b)
    print(f"check_structure: {len(files)} files, {len(breaches)} breaches", file=sys.stderr)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
