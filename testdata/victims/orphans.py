"""orphans: subprocess.run(..., shell=True, timeout=...) leaves orphans.

Three times, the victim runs

    subprocess.run("sleep 3600; echo done", shell=True, timeout=0.3)

and catches TimeoutExpired: run() kills the shell (SIGKILL) and reaps it,
but the shell's child `sleep 3600` survives, is reparented (to the nearest
child subreaper, else init) and keeps running in the victim's process group.
The victim then sleeps forever in time.sleep.

(The shell's sleep is 3600 s, not the usual 30 s, so the orphans outlive any
test; they are in the victim's process group, so killing the group ends
them. A run whose shell was killed before it forked sleep leaves no orphan
and is repeated, at most 20 runs in all.)

Ready line:
    ready pid=P orphans=A,B,C orphan_ppid=X,Y,Z
orphans are the `sleep` processes of the victim's process group whose
parent is not the victim; orphan_ppid lists their parents, in the same
order (where they were reparented).

Run: python3 orphans.py
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402

WANT = 3


def orphans(me, pgrp):
    """[(pid, ppid)] of the sleep processes of pgrp not parented by me."""
    found = []
    for pid in victim.pids():
        st = victim.stat(pid)
        if st is None:
            continue
        comm, state, ppid, pg = st
        if comm == "sleep" and pg == pgrp and ppid != me and state != "Z":
            found.append((pid, ppid))
    return sorted(found)


def main():
    me, pgrp = os.getpid(), os.getpgrp()
    runs = 0
    while len(orphans(me, pgrp)) < WANT:
        if runs == 20:
            sys.exit("error: %d runs left only %d orphans" % (runs, len(orphans(me, pgrp))))
        runs += 1
        try:
            subprocess.run("sleep 3600; echo done", shell=True, timeout=0.3,
                           stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pass

    def check():
        found = orphans(me, pgrp)
        if len(found) != WANT:
            return False, "%d orphans, want %d" % (len(found), WANT)
        for pid, _ in found:
            nr, _a = victim.task_syscall(pid)
            if nr not in victim.SLEEPS:
                return False, "orphan %d not in nanosleep (syscall %d)" % (pid, nr)
        nr, _a = victim.task_syscall(me)
        if nr not in victim.SLEEPS:
            return False, "main thread not in nanosleep (syscall %d)" % nr
        return True, "ready pid=%d orphans=%s orphan_ppid=%s" % (
            me,
            ",".join(str(p) for p, _ in found),
            ",".join(str(pp) for _, pp in found),
        )

    victim.report(check)
    victim.sleep_forever()


main()
