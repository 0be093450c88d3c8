"""py_lock_identity: locks named by expression alone (issue 19). By the
first argument:

    abba       the textbook ABBA on two module-global locks: thread "t1"
               does `with a:`, then `with b: pass` on one line; thread "t2"
               the same with b and a. A barrier between the two takes the
               place of the textbook's sleep, so that each surely holds its
               first lock before it asks for the second. Main sleeps.
    abba-join  the same, with main joining t1 (it waits for t1, which is in
               the cycle: main is blocked behind it, not in it).
    module     main takes `lock` at the module's top level with
               lock.acquire() and then sleeps in a loop at that level (its
               only frame is <module>); three threads "waiter-0".."waiter-2"
               wait at `with lock:`. This docstring names lock.release()
               only to show that docstrings are not code: nothing releases
               the lock.

Ready line (from a reporter thread, which then ends), once every thread
that waits for a lock is in futex at its `with` line and main is in its
own wait (a join, or a sleep):
    ready pid=P mode=M [first=TID second=TID] [waiters=TID,...] main=TID
first is t1's TID, second t2's; TIDs are threading.get_native_id(), main's
is the pid.

Run: python3 py_lock_identity.py MODE
"""

import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "abba"
if MODE not in ("abba", "abba-join", "module"):
    sys.exit("usage: py_lock_identity.py abba|abba-join|module")

me = os.getpid()
a, b = threading.Lock(), threading.Lock()
lock = threading.Lock()
both = threading.Barrier(2)
tids = {}


def first():
    tids["t1"] = threading.get_native_id()
    with a:
        both.wait()
        with b: pass


def second():
    tids["t2"] = threading.get_native_id()
    with b:
        both.wait()
        with a: pass


def waiter(i):
    tids["waiter-%d" % i] = threading.get_native_id()
    with lock:
        pass


def at(thread, text):
    """thread's innermost frame stands at the line whose text is text,
    and the thread is in futex."""
    f = sys._current_frames().get(thread.ident)
    if f is None:
        return False
    with open(f.f_code.co_filename) as src:
        lines = src.read().splitlines()
    if lines[f.f_lineno - 1].strip() != text:
        return False
    nr, _ = victim.task_syscall(me, thread.native_id)
    return nr == victim.FUTEX


def main_waits(text):
    """main's <module> frame stands at the line text starts and main is
    in a syscall: a sleep (select before Python 3.11) or a join's futex."""
    f = sys._current_frames().get(threading.main_thread().ident)
    while f is not None and f.f_code.co_name != "<module>":
        f = f.f_back
    if f is None:
        return False
    with open(f.f_code.co_filename) as src:
        line = src.read().splitlines()[f.f_lineno - 1].strip()
    return line.startswith(text) and victim.task_syscall(me)[0] >= 0


def check_abba(t1, t2):
    def check():
        if not at(t1, "with b: pass") or not at(t2, "with a: pass"):
            return False, "t1 and t2 are not both waiting at their inner with"
        if not main_waits("t1.join()" if MODE == "abba-join" else "time.sleep(3600)"):
            return False, "main not in its wait"
        return True, "ready pid=%d mode=%s first=%d second=%d main=%d" % (me, MODE, tids["t1"], tids["t2"], me)
    return check


def check_module(waiters):
    def check():
        if not all(at(w, "with lock:") for w in waiters):
            return False, "the waiters are not all at `with lock:`"
        if not main_waits("time.sleep(1)"):
            return False, "main not asleep"
        ids = [tids["waiter-%d" % i] for i in range(len(waiters))]
        return True, "ready pid=%d mode=module waiters=%s main=%d" % (me, victim.tids_field(ids), me)
    return check


if MODE in ("abba", "abba-join"):
    t1 = threading.Thread(target=first, name="t1", daemon=True)
    t2 = threading.Thread(target=second, name="t2", daemon=True)
    t1.start()
    t2.start()
    victim.report(check_abba(t1, t2))
    if MODE == "abba-join":
        t1.join()  # never returns
    while True:
        time.sleep(3600)

if MODE == "module":
    lock.acquire()
    waiters = [threading.Thread(target=waiter, args=(i,), name="waiter-%d" % i, daemon=True) for i in range(3)]
    for w in waiters:
        w.start()
    victim.report(check_module(waiters))
    while True:
        time.sleep(1)
