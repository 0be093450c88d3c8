"""py_spin_renderers: one thread spins forever holding a lock seven others want.

Eight threads "renderer-0".."renderer-7" render pages under one shared
threading.Lock (`with page_lock:` in renderer()). renderer-0 takes the lock
first and, inside the with-block, runs a pagination loop that never ends:
pure Python, a two-line body, no syscalls (`last` is PAGES, never reached:
`page` stays in 0..PAGES-1). The
seven others, started once renderer-0 holds the lock, block at the
`with page_lock:` line (futex on the lock's semaphore, GIL released). So
renderer-0 is on a CPU (state R, its CPU time growing) as long as the
victim lives; the main thread joins the renderers.

Ready line (from a reporter thread, which then ends):
    ready pid=P holder=TID waiters=TID,... lockline=N loopline=M
holder is renderer-0, waiters renderer-1..7 (TIDs ascending), lockline the
line of `with page_lock:`, loopline the first line of the loop body. TIDs
are threading.get_native_id().

Run: python3 py_spin_renderers.py
"""

import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

RENDERERS = 8
PAGES = 1000

page_lock = threading.Lock()
holding = threading.Event()
tids = [0] * RENDERERS


def renderer(i):
    tids[i] = threading.get_native_id()
    page, last, rendered = 0, PAGES, 0  # page stays in 0..PAGES-1: never last
    with page_lock:
        holding.set()
        while page != last:
            page = (page + 1) % PAGES
            rendered += 1


def main():
    me = os.getpid()
    lockline = victim.source_line(__file__, "with page_lock:")
    loopline = victim.source_line(__file__, "page = (page + 1) % PAGES")

    threads = [threading.Thread(target=renderer, args=(i,), name="renderer-%d" % i)
               for i in range(RENDERERS)]
    threads[0].start()
    holding.wait()
    for t in threads[1:]:
        t.start()

    def check():
        if not all(tids):
            return False, "renderers not all started"
        addrs = set()
        for tid in tids[1:]:
            nr, a = victim.task_syscall(me, tid)
            if nr != victim.FUTEX:
                return False, "waiter %d not in futex (syscall %d)" % (tid, nr)
            addrs.add(a[0])
        if len(addrs) != 1:
            return False, "waiters in futex on %d addresses" % len(addrs)
        # The holder is waiting for the GIL while this check holds it: look
        # at its CPU time across a sleep (which releases the GIL) instead.
        before = victim.task_stat(me, tids[0])
        time.sleep(0.05)
        after = victim.task_stat(me, tids[0])
        if before is None or after is None or after[1] <= before[1]:
            return False, "holder %d's CPU time does not grow (%r, %r)" % (tids[0], before, after)
        return True, "ready pid=%d holder=%d waiters=%s lockline=%d loopline=%d" % (
            me, tids[0], victim.tids_field(sorted(tids[1:])), lockline, loopline)

    victim.report(check)
    for t in threads:
        t.join()  # never returns


main()
