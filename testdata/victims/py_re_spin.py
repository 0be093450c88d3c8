"""py_re_spin: a thread stuck inside one C call that never returns.

renderer runs re.match on a pattern with nested quantifiers against a
string that almost matches: the regex engine (C, in _sre) backtracks for
longer than any run, holding the GIL, one unchanging Python frame on its
stack. What a Python stack cannot say — where the CPU is — the kernel's
on-CPU samples can: in the engine's match function. The main thread joins
it.

With the argument "python" renderer loops in Python code instead (a
counter whose exit is never reached): the interpreter itself is on the
CPU, no C call above it.

Ready line, printed by renderer as it enters the match (which holds the
GIL throughout: no other thread could print it after):
    ready pid=P renderer=TID
"""
import os
import re
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402


def render():
    print(f"ready pid={os.getpid()} renderer={threading.get_native_id()}", flush=True)
    re.match(r"(a+)+$", "a" * 64 + "b")


def main_joins():
    """Whether the main thread is blocked in its join of renderer: its
    frame is the join's and it sits in futex with the GIL let go."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    name = frame.f_code.co_name if frame is not None else ""
    return name in ("join", "_wait_for_tstate_lock") and victim.task_syscall(os.getpid())[0] == victim.FUTEX


def paginate():
    # Ready once main is in its join, seen twice with a sleep between
    # (the sleep lets the GIL go: a main thread that was only waiting for
    # the GIL gets it and moves on, and is not seen in its join twice).
    while not (main_joins() and (time.sleep(0.01) or main_joins())):
        time.sleep(0.01)
    print(f"ready pid={os.getpid()} renderer={threading.get_native_id()}", flush=True)
    page = 0
    while page >= 0:
        page = (page + 1) % 1000


render = paginate if sys.argv[1:] == ["python"] else render


t = threading.Thread(target=render, name="renderer", daemon=True)
t.start()
t.join()
