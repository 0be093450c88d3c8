"""py_signal_reenter: a SIGHUP handler re-enters the code the main thread
was inside when the signal came (issue 19, re-entry). By the first
argument:

    lock   start() takes state_lock (a threading.Lock) and, holding it,
           waits in load_config() for a config pipe that nobody writes.
           SIGHUP runs run_sighup() on the main thread, on top of that
           read: it calls start() again, which waits at `with state_lock:`
           for the lock its own outer frame holds. A self-deadlock.
    rlock  the same with state_rlock (a threading.RLock) in start_r(): the
           handler's start_r() takes it again (it is reentrant) and waits
           in load_config() for the pipe like its outer frame. No
           deadlock: a read that never returns.

A helper thread sends SIGHUP to the main thread (signal.pthread_kill) once
main waits in the read, and ends.

Ready line (from a reporter thread, which then ends), once the main thread
stands where the mode puts it — inner start() at its with line in futex
(lock), or the inner load_config() in read (rlock) — with the handler
between the two start frames:
    ready pid=P mode=M main=TID withline=N
withline is the line of `with state_lock:` (lock) or `with state_rlock:`
(rlock).

Run: python3 py_signal_reenter.py MODE
"""

import os
import signal
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "lock"
if MODE not in ("lock", "rlock"):
    sys.exit("usage: py_signal_reenter.py lock|rlock")

me = os.getpid()
state_lock = threading.Lock()
state_rlock = threading.RLock()
cfg_r, cfg_w = os.pipe()  # nobody writes cfg_w
main_thread = threading.main_thread()


def load_config():
    return os.read(cfg_r, 1)  # SIGHUP arrives while main waits here


def start():
    with state_lock:
        load_config()


def start_r():
    with state_rlock:
        load_config()


def run_sighup(signum, frame):
    if MODE == "lock":
        start()
    else:
        start_r()


def names():
    f = sys._current_frames().get(main_thread.ident)
    out = []
    while f is not None:
        out.append(f.f_code.co_name)
        f = f.f_back
    return out


def send():
    """Wait for main to stand in the read, then send it SIGHUP."""
    while names()[:2] != ["load_config", "start" if MODE == "lock" else "start_r"] or victim.task_syscall(me)[0] != victim.SYS["read"]:
        threading.Event().wait(0.01)
    signal.pthread_kill(main_thread.ident, signal.SIGHUP)


def check():
    n = names()
    outer = "start" if MODE == "lock" else "start_r"
    if MODE == "lock":
        want, nr = [outer, "run_sighup", "load_config", outer], victim.FUTEX
    else:
        want, nr = ["load_config", outer, "run_sighup", "load_config", outer], victim.SYS["read"]
    if n[:len(want)] != want:
        return False, "main's frames are %r, want %r on top" % (n, want)
    if victim.task_syscall(me)[0] != nr:
        return False, "main not in syscall %d" % nr
    line = victim.source_line(__file__, "with state_lock:" if MODE == "lock" else "with state_rlock:")
    return True, "ready pid=%d mode=%s main=%d withline=%d" % (me, MODE, me, line)


signal.signal(signal.SIGHUP, run_sighup)
threading.Thread(target=send, name="sender", daemon=True).start()
victim.report(check)
if MODE == "lock":
    start()
else:
    start_r()
