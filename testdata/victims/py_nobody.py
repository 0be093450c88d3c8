"""py_nobody: the main thread waits for what no thread is left to do, or
for a thread stuck itself. By the first argument:

    queuejoin  queue.join() after both workers died (an exception) before
               calling task_done();
    event      Event.wait() for a set() that the thread meant to call it
               never makes: it died first;
    join       Thread.join() on a thread that waits in Event.wait() for a
               set() only the main thread would make;
    eventjoin  a thread "joiner" joins a thread "waiter" that waits in
               Event.wait() for a set() nobody makes (the setter was never
               started); main joins the joiner;
    future     a ThreadPoolExecutor of one worker: the task it runs waits
               for the result of a second task submitted to the same
               executor, which can never start; main waits for the first;
    pool       a multiprocessing.Pool result whose worker process is
               blocked (it sleeps for ever);
    poollost   multiprocessing.Pool(2).map() of four tasks, the first of
               which kills its worker after 0.3 s (SIGKILL, as the OOM
               killer would):
               the pool starts a new worker, the task is lost with the
               old one, and map() waits for its result for ever while
               both workers wait for tasks;
    asyncio    asyncio.run() of a coroutine, "handler", that calls
               time.sleep(): the event loop runs nothing else.

Worker deaths are unlogged (threading.excepthook prints nothing).

Ready line (from a reporter thread, which then ends), once the main
thread waits where it should (in futex, or nanosleep for asyncio) and the
workers that die are gone from /proc/P/task:
    ready pid=P mode=M [worker=TID] [joiner=TID] [lost=PID workers=PID,PID replacement=PID]
worker is the joined thread (join, eventjoin) or the executor's worker
(future); joiner the thread that joins it (eventjoin).

Run: python3 py_nobody.py MODE
"""

import asyncio
import concurrent.futures
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

me = os.getpid()
threading.excepthook = lambda args: None
dead = []  # TIDs of threads that must be gone
extra = {}


def die():
    dead.append(threading.get_native_id())
    raise RuntimeError("a worker fails before it does its part")


def main_in(nrs):
    nr, _ = victim.task_syscall(me)
    return nr in nrs


def check():
    tasks = victim.tasks(me)
    if any(t in tasks for t in dead):
        return False, "a dead worker is still in /proc/%d/task" % me
    want = victim.SLEEPS if mode == "asyncio" else (victim.FUTEX,)
    if not main_in(want):
        return False, "main thread not in its wait (syscall %d)" % victim.task_syscall(me)[0]
    line = "ready pid=%d mode=%s" % (me, mode)
    for key in ("worker", "joiner"):
        if key in extra:
            nr, _ = victim.task_syscall(me, extra[key])
            if nr != victim.FUTEX:
                return False, "%s %d not in futex (syscall %d)" % (key, extra[key], nr)
            line += " %s=%d" % (key, extra[key])
    return True, line


def queuejoin():
    q = queue.Queue()
    for i in range(3):
        q.put(i)

    def worker():
        q.get()
        die()

    ts = [threading.Thread(target=worker, name="worker-%d" % i) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()  # they are gone before the ready line
    victim.report(check)
    q.join()


def event():
    done = threading.Event()

    def worker():
        die()
        done.set()  # never reached

    t = threading.Thread(target=worker, name="setter")
    t.start()
    t.join()
    victim.report(check)
    done.wait()


def join():
    go = threading.Event()

    def worker():
        extra["worker"] = threading.get_native_id()
        go.wait()  # main would set it after the join: never

    t = threading.Thread(target=worker, name="waiter")
    t.start()
    while "worker" not in extra:
        time.sleep(0.01)
    victim.report(check)
    t.join()
    go.set()


def eventjoin():
    done = threading.Event()  # its setter was never started

    def waiter():
        extra["worker"] = threading.get_native_id()
        done.wait()

    w = threading.Thread(target=waiter, name="waiter")

    def joiner():
        extra["joiner"] = threading.get_native_id()
        w.join()

    j = threading.Thread(target=joiner, name="joiner")
    w.start()
    j.start()
    while "worker" not in extra or "joiner" not in extra:
        time.sleep(0.01)
    victim.report(check)
    j.join()


def future():
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool")

    def inner():
        return 1

    def outer():
        extra["worker"] = threading.get_native_id()
        return ex.submit(inner).result()  # the only worker waits for itself

    f = ex.submit(outer)
    while "worker" not in extra:
        time.sleep(0.01)
    victim.report(check)
    f.result()


def forever(_):
    while True:
        time.sleep(3600)


def pool():
    with multiprocessing.get_context("fork").Pool(1) as p:
        r = p.apply_async(forever, (0,))
        victim.report(check)
        r.get()


def lost_task(i):
    if i == 0:
        time.sleep(0.3)  # the task runs a while before the kill
        os.kill(os.getpid(), signal.SIGKILL)
    return i


def children():
    out = []
    for pid in victim.pids():
        st = victim.stat(pid)
        if st is not None and st[2] == me:
            out.append(pid)
    return sorted(out)


def poollost():
    with multiprocessing.get_context("fork").Pool(2) as p:
        first = children()

        def lost():
            now = children()
            gone = [c for c in first if c not in now]
            if len(first) != 2 or len(gone) != 1 or len(now) != 2:
                return False, "workers %r, then %r: want one of two replaced" % (first, now)
            for c in now:
                st = victim.stat(c)
                if st is None or st[1] != "S":
                    return False, "worker %d not asleep" % c
                nr, _ = victim.task_syscall(c)
                if nr not in (victim.FUTEX, victim.SYS["read"]):
                    return False, "worker %d not waiting for a task (syscall %d)" % (c, nr)
            ok, line = check()
            if not ok:
                return ok, line
            late = [c for c in now if c not in first]
            return True, line + " lost=%d workers=%s replacement=%d" % (gone[0], victim.tids_field(now), late[0])

        victim.report(lost)
        p.map(lost_task, range(4))


async def handler():
    time.sleep(3600)  # a synchronous call inside a coroutine


def run_asyncio():
    victim.report(check)
    asyncio.run(handler())


modes = {"queuejoin": queuejoin, "event": event, "join": join, "eventjoin": eventjoin, "future": future, "pool": pool, "poollost": poollost, "asyncio": run_asyncio}
mode = sys.argv[1] if len(sys.argv) > 1 else "queuejoin"
if mode not in modes:
    sys.exit("usage: py_nobody.py %s" % "|".join(modes))
modes[mode]()
sys.exit("the wait ended")
