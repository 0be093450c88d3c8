"""py_log_lock: a logging handler's lock held by a thread blocked writing.

Thread "writer" logs through a StreamHandler whose stream is a pipe nobody
reads: the pipe fills, and its write blocks inside Handler.handle, which
holds the handler's lock (self.lock: taken through Handler.acquire() before
Python 3.13, in a with-block from 3.13). Thread "other" then logs through
the same handler and waits for that lock in the standard library's code.
The main thread sleeps.

Ready line (from a reporter thread, which then ends), once the writer is in
write(2) and the other thread in futex:
    ready pid=P writer=TID other=TID

Run: python3 py_log_lock.py
"""
import logging
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

r, w = os.pipe()  # r stays open and is never read
stream = os.fdopen(w, "w", buffering=1)
log = logging.getLogger("victim")
log.addHandler(logging.StreamHandler(stream))
log.setLevel(logging.INFO)
tids = {}


def writer():
    tids["writer"] = threading.get_native_id()
    while True:
        log.info("x" * 4096)


def other():
    tids["other"] = threading.get_native_id()
    while "writer" not in tids or victim.task_syscall(os.getpid(), tids["writer"])[0] != victim.SYS["write"]:
        time.sleep(0.01)
    time.sleep(0.1)
    log.info("hello")


def check():
    if "other" not in tids or "writer" not in tids:
        return False, "threads not started"
    me = os.getpid()
    if victim.task_syscall(me, tids["writer"])[0] != victim.SYS["write"]:
        return False, "writer not in write"
    if victim.task_syscall(me, tids["other"])[0] != victim.FUTEX:
        return False, "other not in futex"
    return True, "ready pid=%d writer=%d other=%d" % (me, tids["writer"], tids["other"])


threading.Thread(target=writer, name="writer", daemon=True).start()
threading.Thread(target=other, name="other", daemon=True).start()
victim.report(check)
victim.sleep_forever()
