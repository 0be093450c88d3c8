"""py_mem_threads: threads to be read from the interpreter's memory.

Thread "holder" takes lock and sleeps in it (its innermost Python frame is
hold(), at the marked line); thread "waiter" waits at "with lock:" in
wait(); thread "spinner" spins in pure Python in spin(), and so wants the
GIL; the main thread joins the waiter in threading's join, below <module>.
Functions are nested two deep, so that a stack has frames of its own
module above threading's.

Ready line, once the holder and the waiter are in their waits twice 100 ms
apart:
    ready pid=P holder=TID waiter=TID spinner=TID main=TID

Run: python3 py_mem_threads.py
"""
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

lock = threading.Lock()
tids = {}
held = threading.Event()


def hold():
    tids["holder"] = threading.get_native_id()
    with lock:
        held.set()
        time.sleep(3600)  # LINE holder


def wait():
    tids["waiter"] = threading.get_native_id()
    held.wait()
    with lock:  # LINE waiter
        pass


def spin():
    tids["spinner"] = threading.get_native_id()
    n = 0
    while True:  # LINE spinner
        n += 1


def outer(f):
    return inner(f)


def inner(f):
    return f()  # LINE inner


threads = [threading.Thread(target=outer, args=(f,), name=n, daemon=True) for f, n in ((hold, "holder"), (wait, "waiter"), (spin, "spinner"))]
for t in threads:
    t.start()
me = os.getpid()


def check():
    if len(tids) < 3:
        return False, "threads not started"
    h, w = victim.task_syscall(me, tids["holder"])[0], victim.task_syscall(me, tids["waiter"])[0]
    # time.sleep is a nanosleep, or (3.10 and older) a select.
    if h < 0 or h == victim.FUTEX or w != victim.FUTEX:
        return False, "holder in %s, waiter in %s" % (h, w)
    return True, "ready pid=%d holder=%d waiter=%d spinner=%d main=%d" % (me, tids["holder"], tids["waiter"], tids["spinner"], me)


victim.report(check)
threads[1].join()  # LINE main
