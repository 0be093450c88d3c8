"""py_gil_held: a C call that blocks while holding the GIL.

The main thread calls libc's read(2) through ctypes.PyDLL, which (unlike
ctypes.CDLL) keeps the GIL across the call, on a pipe nobody writes: a C
extension or driver that blocks without Py_BEGIN_ALLOW_THREADS. Thread
"worker" counts in Python code and so needs the GIL, which never comes:
it waits in the interpreter's take_gil, waking every 5 ms to ask for it.
Neither moves; the whole process is stuck behind main's read.

Ready line, written by a forked reporter process (no thread of the victim
can run Python once main is in its read) when it has seen main in read(2)
and the worker in futex twice, 100 ms apart:
    ready pid=P worker=TID main=TID
main's TID is the pid.

Run: python3 py_gil_held.py
"""
import ctypes
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

libc = ctypes.PyDLL(None, use_errno=True)
started = threading.Event()
worker_tid = []


def count():
    worker_tid.append(threading.get_native_id())
    started.set()
    n = 0
    while True:
        n += 1


r, w = os.pipe()  # w is kept open and never written: the read waits for ever
t = threading.Thread(target=count, name="worker", daemon=True)
t.start()
started.wait()
me, worker = os.getpid(), worker_tid[0]


def stuck():
    return victim.task_syscall(me)[0] == victim.SYS["read"] and victim.task_syscall(me, worker)[0] == victim.FUTEX


if os.fork() == 0:
    # The reporter: a process of its own, with its own interpreter.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if stuck():
            time.sleep(0.1)
            if stuck():
                os.write(1, ("ready pid=%d worker=%d main=%d\n" % (me, worker, me)).encode())
                os._exit(0)
        time.sleep(0.01)
    os.write(2, b"error: hang not reached within 60s\n")
    os.kill(me, 9)
    os._exit(1)
buf = ctypes.create_string_buffer(1)
libc.read(r, buf, 1)
raise SystemExit("the read returned")
