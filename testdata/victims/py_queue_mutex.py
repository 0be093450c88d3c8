"""py_queue_mutex: a queue.Queue's own mutex held by a thread that blocks.

Thread "holder" inspects the queue under its lock (`with q.mutex:`) and,
holding it, reads a pipe nobody writes. Thread "getter" then calls
q.get(), which takes the same lock first (`with self.not_empty:`, a
Condition over q.mutex): it waits for the holder's lock, not for an item.
The main thread sleeps.

Ready line (from a reporter thread, which then ends), once the holder is
in read(2) and the getter in futex:
    ready pid=P holder=TID getter=TID

Run: python3 py_queue_mutex.py
"""
import os
import queue
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

q = queue.Queue()
r, w = os.pipe()  # w stays open and is never written
tids = {}


def holder():
    tids["holder"] = threading.get_native_id()
    with q.mutex:
        os.read(r, 1)


def getter():
    tids["getter"] = threading.get_native_id()
    while "holder" not in tids or victim.task_syscall(os.getpid(), tids["holder"])[0] != victim.SYS["read"]:
        time.sleep(0.01)
    q.get()


def check():
    if "holder" not in tids or "getter" not in tids:
        return False, "threads not started"
    me = os.getpid()
    if victim.task_syscall(me, tids["holder"])[0] != victim.SYS["read"]:
        return False, "holder not in read"
    if victim.task_syscall(me, tids["getter"])[0] != victim.FUTEX:
        return False, "getter not in futex"
    return True, "ready pid=%d holder=%d getter=%d" % (me, tids["holder"], tids["getter"])


threading.Thread(target=holder, name="holder", daemon=True).start()
threading.Thread(target=getter, name="getter", daemon=True).start()
victim.report(check)
victim.sleep_forever()
