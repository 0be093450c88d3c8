"""py_heartbeat: a Python process whose progress can be seen from outside,
for the harm and kill-trial tests. Every 10 ms its main thread rewrites a
counter in the file named by its first argument (20 digits and a newline),
so a test that stops or damages it sees the counter freeze. Two threads
hang meanwhile: "holder" takes a lock and sleeps holding it, "waiter"
waits for the lock.

Ready line, once both are in place and the counter runs:
    ready pid=P beat=PATH holder=TID waiter=TID

Run: python3 py_heartbeat.py BEATFILE
"""

import os
import sys
import threading
import time

beat = sys.argv[1]
lock = threading.Lock()
ids = {}
held = threading.Event()


def holder():
    ids["holder"] = threading.get_native_id()
    with lock:
        held.set()
        while True:
            time.sleep(1000)


def waiter():
    ids["waiter"] = threading.get_native_id()
    held.wait()
    with lock:
        pass


threading.Thread(target=holder, name="holder", daemon=True).start()
threading.Thread(target=waiter, name="waiter", daemon=True).start()
held.wait()
while len(ids) < 2:
    time.sleep(0.001)

fd = os.open(beat, os.O_RDWR | os.O_CREAT, 0o644)
n = 0
ready = False
while True:
    n += 1
    os.pwrite(fd, b"%020d\n" % n, 0)
    if not ready and n >= 2:
        print("ready pid=%d beat=%s holder=%d waiter=%d" % (os.getpid(), beat, ids["holder"], ids["waiter"]), flush=True)
        ready = True
    time.sleep(0.01)
