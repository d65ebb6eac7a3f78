#!/usr/bin/env python3
"""Keeps the run contract in protocol/ (protocol/README.md).

Fails, naming file and line, when product code
  - spells a GPUSCOPE_* name in a string literal outside protocol/ (the names
    are constants in protocol/environment.h, so that the CLI and the library
    cannot drift apart: change one side and the other still compiles), or
  - includes across an arrow the layout forbids: protocol/ uses nothing else
    of the product; analyzer/ and schemas/ nothing of the capture side
    (preload/, cupti/); the capture side nothing of analyzer/.
samples/, tests/, docs/ and scripts/ are not product code.

Usage: check_contract.py [REPO_ROOT]   (default: two levels above this file)
"""
import os
import re
import sys

PRODUCT_DIRS = ("analyzer", "cupti", "preload", "protocol", "schemas", "cmake")
SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".h.in")
# A name, not a part of one (the HTML report's __GPUSCOPE_DATA__ placeholder).
ENV_NAME = re.compile(r"(?<![A-Za-z0-9_])GPUSCOPE_[A-Z0-9]")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# What each folder may not include from (its headers' top-level folders).
FORBIDDEN = {
    "protocol": {"analyzer", "cupti", "preload", "schemas", "samples"},
    "analyzer": {"cupti", "preload", "samples"},
    "schemas": {"analyzer", "cupti", "preload", "protocol", "samples"},
    "preload": {"analyzer", "samples"},
    "cupti": {"analyzer", "samples"},
}
# protocol/ is linked into the preloaded library: system headers only.
PROTOCOL_ANGLE_DIRS = ("sys/", "linux/", "netinet/", "arpa/", "net/")


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


def product_sources(root):
    for top in PRODUCT_DIRS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(folder, name)


def header_index(root):
    """Every header of the tree, as paths relative to root."""
    headers = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build", "dist"))]
        headers += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith((".h", ".hpp", ".cuh"))]
    return headers


def include_targets(root, source, included, headers):
    """Top-level folders of the headers `#include "included"` in `source` may mean."""
    beside = os.path.normpath(os.path.join(os.path.dirname(source), included))
    if os.path.isfile(beside):
        return {os.path.relpath(beside, root).split(os.sep)[0]}
    suffix = "/" + included.lstrip("./")
    return {h.split(os.sep)[0] for h in headers if ("/" + h).endswith(suffix)}


def check(root):
    problems = []
    headers = header_index(root)
    for path in product_sources(root):
        rel = os.path.relpath(path, root)
        top = rel.split(os.sep)[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if top != "protocol":
            for line, literal in string_literals(text):
                if ENV_NAME.search(literal):
                    problems.append(f"{rel}:{line}: a GPUSCOPE_* name in a string literal (\"{literal[:60]}\"): "
                                    "use its constant from protocol/environment.h")
        for match in INCLUDE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            kind, included = match.groups()
            if kind == "<":
                if top == "protocol" and "/" in included and not included.startswith(PROTOCOL_ANGLE_DIRS):
                    problems.append(f"{rel}:{line}: protocol/ includes <{included}>: it uses system headers only")
                continue
            targets = include_targets(root, path, included, headers)
            if targets and targets <= FORBIDDEN.get(top, set()):
                problems.append(f"{rel}:{line}: {top}/ includes \"{included}\" from {'/'.join(sorted(targets))}/, "
                                "an arrow protocol/README.md does not allow")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    root = os.path.abspath(root)
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check_contract: {len(problems)} problem(s) in {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
