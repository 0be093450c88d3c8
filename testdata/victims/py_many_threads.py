"""py_many_threads: many Python threads, blocked, each at its own depth.

N threads (the first argument, default 100): thread i recurses i % 10
calls deep in descend(), then blocks in block(): the even ones in an
Event's wait (threading's Condition.wait, below block), the odd ones in
the acquire of a lock that the main thread holds. Both are a futex wait,
with the GIL released. One more thread, "heartbeat", appends
time.monotonic_ns() as 8 little-endian bytes to the file named by the
second argument (default /dev/null) every 5 ms: a gap between two stamps
longer than that is a time the victim did not run (a pause by a reader
that stops it, or the machine's load). The main thread sleeps.

Ready line, once every one of the N threads is in its futex wait twice
100 ms apart:
    ready pid=P threads=N

Run: python3 py_many_threads.py [N [HEARTBEAT_FILE]]
"""
import os
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
beats = sys.argv[2] if len(sys.argv) > 2 else os.devnull

gate = threading.Lock()
gate.acquire()  # never released: the odd threads wait for it
tids = {}


def descend(i, depth):
    if depth > 0:
        return descend(i, depth - 1)
    return block(i)


def block(i):
    tids[i] = threading.get_native_id()
    if i % 2 == 0:
        threading.Event().wait()  # LINE event
    else:
        gate.acquire()  # LINE lock


for i in range(n):
    threading.Thread(target=descend, args=(i, i % 10), name="blocked-%d" % i, daemon=True).start()
threading.Thread(target=victim.heartbeat, args=(beats,), name="heartbeat", daemon=True).start()
me = os.getpid()


def check():
    if len(tids) < n:
        return False, "%d of %d threads started" % (len(tids), n)
    for i, tid in tids.items():
        nr = victim.task_syscall(me, tid)[0]
        if nr != victim.FUTEX:
            return False, "thread %d (tid %d) in %s, not futex" % (i, tid, nr)
    return True, "ready pid=%d threads=%d" % (me, n)


victim.report(check)
victim.sleep_forever()
