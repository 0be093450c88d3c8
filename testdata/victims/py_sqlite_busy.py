"""py_sqlite_busy: a SQLite write that waits for another process's write
transaction, retrying in its busy handler.

A forked child "holder" opens the database in the temporary directory and
begins a write transaction (BEGIN IMMEDIATE: SQLite's RESERVED lock, a
POSIX lock on the database file) and sleeps. The victim then inserts with
a busy timeout of an hour: SQLite tries the lock with fcntl(F_SETLK), which
fails without blocking, sleeps (at most 100 ms), and tries again.

Ready line (once the victim sleeps in its busy handler and /proc/locks
shows the holder's lock on the database file):

    ready pid=P holder=H path=PATH
"""

import os
import sqlite3
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402


def holder_lock(path, holder):
    """Whether /proc/locks shows a POSIX lock of holder's on path."""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        for line in f:
            fl = line.split()
            if len(fl) >= 8 and fl[1] == "POSIX" and fl[4] == str(holder) and fl[5].endswith(":%d" % ino):
                return True
    return False


def main():
    tmp = os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(tmp, "hangdoc-sqlite-%d.db" % os.getpid())
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()

    r, w = os.pipe()
    holder = os.fork()
    if holder == 0:
        victim.set_pdeathsig()
        os.close(r)
        h = sqlite3.connect(path, isolation_level=None)
        h.execute("BEGIN IMMEDIATE")
        h.execute("INSERT INTO t VALUES (1)")
        os.write(w, b"x")
        victim.sleep_forever()
    os.close(w)
    if os.read(r, 1) != b"x":
        raise SystemExit("error: the holder did not begin its transaction")

    me = os.getpid()

    def check():
        nr, _ = victim.task_syscall(me)
        if nr not in victim.SLEEPS:
            return False, "the victim is not asleep in its busy handler (%d)" % nr
        if not holder_lock(path, holder):
            return False, "no lock of pid %d on %s in /proc/locks" % (holder, path)
        return True, "ready pid=%d holder=%d path=%s" % (me, holder, path)

    victim.report(check)
    con = sqlite3.connect(path, timeout=3600, isolation_level=None)
    con.execute("INSERT INTO t VALUES (2)")
    raise SystemExit("error: the insert went through")


main()
