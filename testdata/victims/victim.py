"""victim.py: what the Python victims share (the counterpart of victim.h).

Each Python victim does

    sys.dont_write_bytecode = True   # no __pycache__ in testdata
    import victim

(the victim's directory is sys.path[0] when it is run as a script) and then
calls victim.report(check) once the hang is about to be entered: a daemon
thread polls check() until it holds twice in a row 100 ms apart, writes the
ready line with a single write(2) on fd 1 and ends. If the hang is not
reached within 15 s it writes the last reason to stderr and kills the victim
with SIGKILL, so the test sees the victim exit before its ready line.

check() returns (True, "ready pid=P ...") or (False, reason).
"""

import ctypes
import os
import platform
import signal
import threading
import time

# Syscall numbers of the machines hangdoc supports.
_SYSCALLS = {
    "x86_64": {
        "read": 0,
        "write": 1,
        "nanosleep": 35,
        "recvfrom": 45,
        "wait4": 61,
        "clock_nanosleep": 230,
        "waitid": 247,
    },
    "aarch64": {
        "read": 63,
        "write": 64,
        "waitid": 95,
        "nanosleep": 101,
        "clock_nanosleep": 115,
        "recvfrom": 207,
        "wait4": 260,
    },
}
_SYSCALLS["amd64"] = _SYSCALLS["x86_64"]
_SYSCALLS["arm64"] = _SYSCALLS["aarch64"]

try:
    SYS = _SYSCALLS[platform.machine()]
except KeyError:
    raise SystemExit("error: no syscall table for machine %r" % platform.machine())

SLEEPS = (SYS["nanosleep"], SYS["clock_nanosleep"])

PR_SET_PDEATHSIG = 1


def set_pdeathsig(sig=signal.SIGKILL):
    """Ask the kernel to send sig to this process when its parent (the thread
    that forked it) dies. Usable as subprocess's preexec_fn."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        os._exit(120)


def task_syscall(pid, tid=None):
    """(nr, args) of /proc/PID/task/TID/syscall; nr is -1 when the thread
    is not blocked in a syscall and -2 when the file cannot be read."""
    if tid is None:
        tid = pid
    try:
        with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
            fields = f.read().split()
    except OSError:
        return -2, []
    if not fields or fields[0] == "running":
        return -1, []
    nr = int(fields[0])
    if nr < 0:
        return -1, []
    return nr, [int(a, 16) for a in fields[1:7]]


def fd_link(pid, fd):
    try:
        return os.readlink("/proc/%d/fd/%d" % (pid, fd))
    except OSError:
        return None


def fd_links(pid):
    """{fd: link} of every open descriptor of pid."""
    out = {}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for name in names:
        link = fd_link(pid, int(name))
        if link is not None:
            out[int(name)] = link
    return out


def stat(pid):
    """(comm, state, ppid, pgrp) of /proc/PID/stat, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    lp, rp = s.index("("), s.rindex(")")
    rest = s[rp + 2:].split()
    return s[lp + 1:rp], rest[0], int(rest[1]), int(rest[2])


def pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def report(check):
    """Start the reporter thread (see the module comment)."""

    def run():
        reason = "not checked"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            ok, msg = check()
            if ok:
                time.sleep(0.1)
                ok, msg = check()
            if ok:
                data = (msg + "\n").encode()
                while data:
                    data = data[os.write(1, data):]
                return
            reason = msg
            time.sleep(0.01)
        os.write(2, ("error: hang not reached within 15s: %s\n" % reason).encode())
        os.kill(os.getpid(), signal.SIGKILL)

    t = threading.Thread(target=run, name="reporter", daemon=True)
    t.start()
    return t


def sleep_forever():
    while True:
        time.sleep(3600)
