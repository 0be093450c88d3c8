"""victim.py: what the Python victims share (the counterpart of victim.h).

Each Python victim does

    sys.dont_write_bytecode = True   # no __pycache__ in testdata
    import victim

(the victim's directory is sys.path[0] when it is run as a script) and then
calls victim.report(check) once the hang is about to be entered: a daemon
thread polls check() until it holds twice in a row 100 ms apart, writes the
ready line with a single write(2) on fd 1 and ends. If the hang is not
reached within 60 s it writes the last reason to stderr and kills the victim
with SIGKILL, so the test sees the victim exit before its ready line.

check() returns (True, "ready pid=P ...") or (False, reason).
"""

import ctypes
import os
import platform
import signal
import struct
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
    return report_fd(check, 1)


def sleep_forever():
    while True:
        time.sleep(3600)


# ---- helpers of the py_* victims (thread-level Python hangs) ----

# futex(2), the syscall a thread blocked on a threading.Lock (a sem_t), on
# the GIL or in a join sits in.
_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}
FUTEX = _FUTEX[platform.machine()]


def report_fd(check, fd):
    """report, but the ready line goes to fd instead of fd 1 (for victims
    that re-point fd 1 elsewhere after saving the original with os.dup)."""

    def run():
        reason = "not checked"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ok, msg = check()
            if ok:
                time.sleep(0.1)
                ok, msg = check()
            if ok:
                data = (msg + "\n").encode()
                while data:
                    data = data[os.write(fd, data):]
                return
            reason = msg
            time.sleep(0.01)
        os.write(2, ("error: hang not reached within 60s: %s\n" % reason).encode())
        os.kill(os.getpid(), signal.SIGKILL)

    t = threading.Thread(target=run, name="reporter", daemon=True)
    t.start()
    return t


def task_stat(pid, tid):
    """(state, utime+stime in clock ticks) of /proc/PID/task/TID/stat, or
    None when the thread is gone."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    return rest[0], int(rest[11]) + int(rest[12])


def tasks(pid):
    """Sorted TIDs of /proc/PID/task."""
    try:
        return sorted(int(n) for n in os.listdir("/proc/%d/task" % pid))
    except OSError:
        return []


def source_line(path, text):
    """1-based number of the only line of the file at path whose text,
    stripped, is text (a victim finding its own `with lock:` line)."""
    with open(path) as f:
        found = [i for i, line in enumerate(f, 1) if line.strip() == text]
    if len(found) != 1:
        raise SystemExit("error: %r is on lines %r of %s, want exactly one" % (text, found, path))
    return found[0]


def tids_field(tids):
    """"T1,T2,..." for a ready line."""
    return ",".join(str(t) for t in tids)


def heartbeat(path):
    """Append time.monotonic_ns() as 8 little-endian bytes to path every
    5 ms, for ever (run it in a thread of its own): a gap between two
    stamps longer than that is a time the victim did not run (a pause by
    a reader that stops it, or the machine's load)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    next_beat = time.monotonic()
    while True:
        os.write(fd, struct.pack("<q", time.monotonic_ns()))
        next_beat += 0.005
        wait = next_beat - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            # Behind (the victim was paused): one beat now, no burst of
            # beats to catch up.
            next_beat = time.monotonic()
