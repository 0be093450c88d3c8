"""py_churn: Python threads whose stacks never settle, for a reader that
reads them while they run.

Eight threads "churn-0".."churn-7" each loop for ever: call level(d) for
a pseudo-random depth d from 0 to 24, which recurses to leaf(), which
does a little arithmetic and returns. A stack read in one moment is
    leaf or level (innermost, any line), level at the marked recursion
    line (each caller), loop at the marked call line, then threading's.
A reader that stitched two moments together would show something else.

Ready line once every thread has looped:
    ready pid=P threads=TID,...

Run: python3 py_churn.py
"""
import os
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402

tids = {}
loops = {}


def leaf(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def level(n):
    if n == 0:
        return leaf(50)  # LINE leaf
    return level(n - 1)  # LINE recurse


def loop(k):
    tids[k] = threading.get_native_id()
    seed = k + 1
    while True:
        seed = (seed * 1103515245 + 12345) % 2147483648
        level(seed % 25)  # LINE call
        loops[k] = loops.get(k, 0) + 1


threads = [threading.Thread(target=loop, args=(k,), name="churn-%d" % k, daemon=True) for k in range(8)]
for t in threads:
    t.start()
me = os.getpid()


def check():
    if len(loops) < len(threads):
        return False, "%d of %d threads looped" % (len(loops), len(threads))
    return True, "ready pid=%d threads=%s" % (me, victim.tids_field(tids[k] for k in sorted(tids)))


victim.report(check)
victim.sleep_forever()
