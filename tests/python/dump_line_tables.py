#!/usr/bin/env python3
"""Dumps CPython line tables with the interpreter's own answer for every instruction.

Ground truth for gpuscope's line decoder (analyzer/symbols/python_lines.h):
compiles a varied set of functions (and a few standard library modules) with
the interpreter running this script, and prints for each code object its raw
line table and, for every 2-byte code unit, the line that CPython's own
PyCode_Addr2Line gives (called through ctypes: the function the interpreter
uses for frame and traceback lines). On 3.10+ that answer is cross-checked
against co_lines(); a disagreement is an error (exit 1), not a silent pick.

Output, one record per line, tab-separated:
  version <PY_VERSION_HEX in hex>
  code <qualified name> <co_firstlineno> <line table hex> <line per code unit, comma-separated; 0 = none>
Runs on CPython 3.9 through 3.13.
"""
import ctypes
import inspect
import sys

HAS_PEP626 = sys.version_info >= (3, 10)

_addr2line = ctypes.pythonapi.PyCode_Addr2Line
_addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
_addr2line.restype = ctypes.c_int


def fixed_source():
    """Hand-written shapes: loops, multi-line expressions, handlers, closures, async, decorators."""
    return '''
import functools

def decorate(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@decorate
def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        while total < i:
            total += 1
    else:
        total -= 1
    return total

def multi_line(a, b):
    value = compute(
        a,
        b,
        key=lambda x: (
            x + 1
        ),
    )
    return [
        y * 2
        for y in value
        if y
    ]

def handlers(path):
    try:
        f = open(path)
    except (OSError, ValueError) as error:
        print(error)
        raise
    except Exception:
        pass
    else:
        return f.read()
    finally:
        print("done")
    with open(path) as g, open(path) as h:
        return g.read() + h.read()

def comprehensions(items):
    a = [i for i in items]
    b = {i: j for i, j in items}
    c = {i for i in items if i}
    d = (i for i in items)
    return a, b, c, list(d)

def outer(x):
    def inner(y):
        def innermost(z):
            return x + y + z
        return innermost
    return inner(x)(x)

def generator(n):
    for i in range(n):
        received = yield i
        if received:
            yield from range(received)

async def coroutine(session, urls):
    async with session:
        async for chunk in session.stream():
            await session.send(chunk)
    return [await session.get(u) for u in urls]

class Model:
    scale = 2

    def __init__(self, weights):
        self.weights = weights

    @property
    def size(self):
        return len(self.weights)

    @staticmethod
    def make(): return Model([1, 2, 3])

square = lambda v: v * v

def one_long_line(a):
    return [a, a + 1, a + 2, a + 3, a + 4, a + 5, a + 6, a + 7, a + 8, a + 9, a + 10, a + 11, a + 12, a + 13, a + 14, a + 15, a + 16, a + 17, a + 18, a + 19, a + 20, a + 21, a + 22, a + 23, a + 24, a + 25, a + 26, a + 27, a + 28, a + 29, a + 30, a + 31, a + 32, a + 33, a + 34, a + 35, a + 36, a + 37, a + 38, a + 39, a + 40, a + 41, a + 42, a + 43, a + 44, a + 45, a + 46, a + 47, a + 48, a + 49, a + 50, a + 51, a + 52, a + 53, a + 54, a + 55, a + 56, a + 57, a + 58, a + 59, a + 60, a + 61, a + 62, a + 63, a + 64, a + 65, a + 66, a + 67, a + 68, a + 69, a + 70]

def conditional_expression(a, b):
    return (a if a else
            b if b else
            None)
'''


def long_function(name, statements):
    """A function longer than 256 lines, with an odd gap now and then."""
    body = []
    for i in range(statements):
        body.append("    v%d = v%d + %d if %d else 0" % (i, i - 1, i, i) if i else "    v0 = 0")
        if i % 37 == 0:
            body.append("")
    body.append("    return v%d" % (statements - 1))
    return "def %s():\n%s\n" % (name, "\n".join(body))


def big_jumps():
    """Line deltas beyond one byte, forwards and backwards (a call whose
    arguments span hundreds of lines comes back to the call's first line)."""
    gap = "\n" * 1500
    arguments = ",\n".join("        %d" % i for i in range(400))
    return ("def far_apart(x):\n    a = x\n%s    b = a + 1\n%s    return b\n\n"
            "def long_call(f):\n    return f(\n%s,\n    )\n\n"
            "def wide_column(x):\n    return %sx\n") % (gap, gap, arguments, " " * 300 + "x + ")


def pattern_matching():
    return '''
def matcher(command):
    match command.split():
        case [action]:
            return action
        case [action, obj] if obj:
            return action + obj
        case _:
            return None
'''


def generated_source():
    parts = [fixed_source(), long_function("long_function", 400), big_jumps()]
    if HAS_PEP626:
        parts.append(pattern_matching())
    return "\n".join(parts)


def library_sources():
    """A few real modules: shapes nobody thought of writing by hand."""
    import contextlib
    import textwrap
    for module in (contextlib, textwrap):
        path = inspect.getsourcefile(module)
        with open(path, encoding="utf-8") as f:
            yield path, f.read()


def code_objects(code):
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from code_objects(const)


def interpreter_lines(code):
    lines = []
    for offset in range(0, len(code.co_code), 2):
        line = _addr2line(code, offset)
        lines.append(line if line > 0 else 0)
    return lines


def co_lines_per_unit(code):
    lines = [0] * (len(code.co_code) // 2)
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            lines[offset // 2] = line if line else 0
    return lines


def dump(code, out):
    lines = interpreter_lines(code)
    if HAS_PEP626 and co_lines_per_unit(code) != lines:
        sys.exit("dump_line_tables: co_lines() and PyCode_Addr2Line disagree for %s" % code.co_name)
    table = code.co_linetable if HAS_PEP626 else code.co_lnotab
    name = getattr(code, "co_qualname", code.co_name)
    out.append("code\t%s\t%d\t%s\t%s" % (name, code.co_firstlineno, table.hex(), ",".join(map(str, lines))))


def main():
    out = ["version\t%x" % sys.hexversion]
    sources = [("<generated>", generated_source())] + list(library_sources())
    for path, source in sources:
        for code in code_objects(compile(source, path, "exec")):
            dump(code, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
