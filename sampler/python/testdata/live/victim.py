"""Victim for sampler/python's captured dumps (see capture.sh).

Two named threads hang in the ways the parsers must show: "lock-waiter" in
a lock acquire inside `with lock:` (MainThread holds the lock) and
"queue-getter" in queue.get. Once both are blocked it prints one JSON line
of thread ids ({name: {"native_id": TID, "ident": pthread_t}}) and "ready".

Modes (argv[1]):
  hang          wait to be dumped and killed
  later         faulthandler.dump_traceback_later(0.4, repeat=True) on
                stderr; exactly two dumps, a line of other stderr output
                between them, then exit
  signal        faulthandler.register(SIGUSR1) on stderr; wait to be
                signalled and killed
  recipe        print the gunicorn-style sys._current_frames() dump, exit
  parent        also start a child Python (no threading, so no thread
                name) that exits when this process dies; "child" in the
                JSON line is its pid
"""
import faulthandler
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback

lock = threading.Lock()
q = queue.Queue()
ids = {}
started = threading.Barrier(3)


def record():
    t = threading.current_thread()
    ids[t.name] = {"native_id": threading.get_native_id(), "ident": threading.get_ident()}


def lock_waiter():
    record()
    started.wait()
    with lock:
        pass


def queue_getter():
    record()
    started.wait()
    q.get()


def recipe():
    id2name = {th.ident: th.name for th in threading.enumerate()}
    code = []
    for ident, stack in sys._current_frames().items():
        code.append("\n# Thread: %s(%d)" % (id2name.get(ident, ""), ident))
        for filename, lineno, name, line in traceback.extract_stack(stack):
            code.append('File: "%s", line %d, in %s' % (filename, lineno, name))
            if line:
                code.append("  %s" % (line.strip()))
    print("\n".join(code), flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "hang"
    record()
    extra = {}
    if mode == "parent":
        # The child blocks reading its stdin, which closes when we die.
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        extra["child"] = child.pid
    with lock:
        threading.Thread(target=lock_waiter, name="lock-waiter", daemon=True).start()
        threading.Thread(target=queue_getter, name="queue-getter", daemon=True).start()
        started.wait()
        time.sleep(0.3)  # let both threads reach their blocking calls
        print(json.dumps({"pid": os.getpid(), "python": sys.version.split()[0], "threads": ids, **extra}), flush=True)
        print("ready", flush=True)
        if mode == "later":
            faulthandler.dump_traceback_later(0.4, repeat=True, file=sys.stderr)
            time.sleep(0.6)
            sys.stderr.write("victim: between the two dumps\n")
            sys.stderr.flush()
            time.sleep(0.4)
            faulthandler.cancel_dump_traceback_later()
            return
        if mode == "recipe":
            recipe()
            return
        if mode == "signal":
            faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
