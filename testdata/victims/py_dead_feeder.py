"""py_dead_feeder: workers wait on a queue whose only feeder died silently.

Eight threads "worker-0".."worker-7" loop on queue.Queue.get(). One thread
"feeder" puts two items and then dies of a KeyError that nobody sees:
threading.excepthook is replaced by a hook that prints nothing. The two
items are handled, and then all eight workers sit in get() forever
(Condition.wait on the queue's not_empty, each on its own waiter lock:
futex). The main thread joins the workers.

Ready line (from a reporter thread, which then ends), once the feeder
thread has ended (is_alive() false and its TID gone from /proc/P/task), both
items were handled and all eight workers wait in get() (eight waiters on
the queue's not_empty condition, every worker in futex):
    ready pid=P workers=TID,... feeder=TID feeder_dead=1
workers are worker-0..7 in order, feeder the dead feeder's TID (no longer
in /proc/P/task). TIDs are threading.get_native_id(). Once the reporter has
ended, the victim's threads are exactly the main thread and the workers.

Run: python3 py_dead_feeder.py
"""

import os
import queue
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402

WORKERS = 8

jobs = queue.Queue()
tids = [0] * WORKERS
handled = []
feeder_tid = [0]


def worker(i):
    tids[i] = threading.get_native_id()
    while True:
        item = jobs.get()
        handled.append((i, item))


def feeder():
    feeder_tid[0] = threading.get_native_id()
    routes = {"page": 1, "thumb": 2}
    jobs.put(("render", routes["page"]))
    jobs.put(("render", routes["thumb"]))
    jobs.put(("render", routes["archive"]))  # KeyError: the feeder dies here


def main():
    me = os.getpid()
    threading.excepthook = lambda args: None  # the feeder dies unlogged

    workers = [threading.Thread(target=worker, args=(i,), name="worker-%d" % i)
               for i in range(WORKERS)]
    for t in workers:
        t.start()
    feed = threading.Thread(target=feeder, name="feeder")
    feed.start()

    def check():
        if feed.is_alive():
            return False, "feeder still alive"
        if feeder_tid[0] in victim.tasks(me):
            return False, "feeder %d still in /proc/%d/task" % (feeder_tid[0], me)
        if len(handled) != 2:
            return False, "%d items handled, want 2" % len(handled)
        waiting = len(jobs.not_empty._waiters)
        if waiting != WORKERS:
            return False, "%d threads wait in get(), want %d" % (waiting, WORKERS)
        for tid in tids:
            nr, _ = victim.task_syscall(me, tid)
            if nr != victim.FUTEX:
                return False, "worker %d not in futex (syscall %d)" % (tid, nr)
        return True, "ready pid=%d workers=%s feeder=%d feeder_dead=1" % (
            me, victim.tids_field(tids), feeder_tid[0])

    victim.report(check)
    for t in workers:
        t.join()  # never returns


main()
