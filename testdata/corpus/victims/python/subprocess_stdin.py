"""subprocess_stdin: subprocess.run(..., capture_output=True) of a Python
child that reads its stdin to the end; its stdin is a pipe this process holds
open and never writes or closes, so the child never finishes and run() waits
for its output forever."""

import os
import subprocess
import sys
import threading

import _victim

CHILD = """
import sys

def read_config():
    return sys.stdin.read()

read_config()
"""


def children():
    out = []
    for tid in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/children" % tid) as f:
            out += [int(p) for p in f.read().split()]
    return out


def child_reading():
    for pid in children():
        try:
            with open("/proc/%d/syscall" % pid) as f:
                if f.read().startswith("0 0x0 "):  # read(0, …)
                    return pid
        except OSError:
            pass
    return 0


def main():
    _victim.setup()
    r, w = os.pipe()
    main_thread = threading.main_thread()

    def report():
        _victim.await_("child in read(0), parent in communicate",
                       lambda: child_reading() and "_communicate" in _victim.names(main_thread))
        _victim.ready(main="MainThread", child=child_reading(), threads=1)

    threading.Thread(target=report, name="report", daemon=True).start()
    subprocess.run([sys.executable, "-c", CHILD], stdin=r, capture_output=True)
    os.close(w)


if __name__ == "__main__":
    main()
