"""Writes the ground truth for sampler/pymem's lineOf as JSON to stdout.

Run it with each interpreter, from sampler/pymem:

    for v in 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
        m=${v%.*}
        /root/.pyenv/versions/$v/bin/python3 testdata/gen_lines.py \
            > testdata/lines-$m.json
    done

It compiles SOURCE (never runs it) and, for every code object reachable
through co_consts, records the line table CPython stores and the line that
CPython's own Python-level API gives for every instruction byte offset, so
the Go decoder is checked against the interpreter rather than against a
second reading of the same documentation.
"""

import dis
import json
import sys

# The long parts are built by repetition so the script stays readable; the
# result is the same text on every run and every interpreter.
LONG_SUM = " + ".join("a%d" % (i % 7) for i in range(160))

BIG_BODY = "\n".join(
    ["def big(a0, a1, a2, a3, a4, a5, a6):",
     "    x = 0"]
    # More than 127 lines with no code: a line delta too large for one
    # lnotab or 3.10 linetable entry.
    + ["    # filler %d" % i for i in range(140)]
    + ["    for i in range(3):",
       "        x += i"]
    + ["        # loop filler %d" % i for i in range(150)]
    # The jump back to the loop's head crosses more than 127 lines
    # backwards.
    + ["        x -= 1"]
    + ["    y = " + LONG_SUM]
    + ["    z%d = y + %d" % (i, i) for i in range(30)]
    + [""] * 20
    + ["    return (x,", "            y,", "            z29)"]
)

SOURCE = '''\
"""Sample module: compiled, never run."""

import contextlib


def deco(f):
    return f


@deco
@deco
def decorated(a,
              b,
              c=3):

    # A comment and a blank line: lines with no code.

    total = (a +
             b +
             c)
    return total


def calls(f, *args):
    return f(
        args[0],
        *args[1:],
        key=lambda v:
            v + 1,
    )


def loops(n):
    out = []
    i = 0
    while (i <
           n):
        if i % 2:
            out.append(i)
        else:
            continue_ = i
        i += 1
    for j in range(n):
        for k in range(j):
            if k == 3:
                break
        else:
            out.append(-j)
    return out


def comprehensions(xs):
    squares = [x * x
               for x in xs
               if x]
    pairs = {x: y for x in xs for y in xs}
    gen = (x + 1 for x in
           xs)
    return squares, pairs, sum(gen), {x for x in xs}


def trying(path):
    try:
        f = open(path)
        try:
            return f.read()
        finally:
            f.close()
    except OSError as e:
        raise ValueError(path) from e
    except (KeyError,
            IndexError):
        pass
    else:
        return None
    finally:
        print("done")


def withs(a, b):
    with contextlib.suppress(KeyError) as s, \\
            contextlib.suppress(IndexError):
        a[b]
    with open(a) as f:
        return f.read()


def outer(n):
    def middle(m):
        def inner(k):
            return n + m + k
        return inner
    return middle(n)(n)


class Thing:
    attr = [i
            for i in range(3)]

    def method(self):
        return lambda: (self,
                        self.attr)

    @property
    def prop(self):
        return 1


async def agen(xs):
    for x in xs:
        yield x


async def coro(cm, it):
    async with cm as c:
        await c
    async for x in it:
        await x
    return [y async for y in it]


def generator(n):
    while n:
        yield n
        n -= 1
    yield from range(3)


total = decorated(1,
                  2)
''' + BIG_BODY + "\n"


def lines_lnotab(code):
    """3.8 and 3.9: a start's line holds until the next start."""
    starts = dict(dis.findlinestarts(code))
    out = []
    line = 0
    for off in range(0, len(code.co_code), 2):
        line = starts.get(off, line)
        out.append(line)
    return out


def lines_co_lines(code):
    """3.10: co_lines gives byte ranges; a line of None is no line."""
    out = [0] * (len(code.co_code) // 2)
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            if off // 2 < len(out):
                out[off // 2] = line or 0
    return out


def lines_positions(code):
    """3.11 and later: one position per code unit, caches included."""
    out = [(p[0] or 0) for p in code.co_positions()]
    assert len(out) == len(code.co_code) // 2, code
    return out


def walk(code, out):
    minor = sys.version_info[1]
    if minor <= 9:
        table, lines = code.co_lnotab, lines_lnotab(code)
    elif minor == 10:
        table, lines = code.co_linetable, lines_co_lines(code)
    else:
        table, lines = code.co_linetable, lines_positions(code)
    out.append({
        "name": getattr(code, "co_qualname", code.co_name),
        "first": code.co_firstlineno,
        "table": table.hex(),
        "lines": lines,
    })
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)


def main():
    code = compile(SOURCE, "sample.py", "exec")
    out = []
    walk(code, out)
    json.dump({
        "version": "%d.%d.%d" % sys.version_info[:3],
        "minor": sys.version_info[1],
        "codes": out,
    }, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
