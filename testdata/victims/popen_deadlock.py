"""popen_deadlock: Popen(stderr=PIPE).wait() with a child that fills stderr.

The parent starts

    [sys.executable, '-c', 'import sys; sys.stderr.write("x"*100000); sys.stderr.flush()']

with stderr=subprocess.PIPE and calls .wait() without ever reading the pipe
(the deadlock the subprocess documentation warns about): the child blocks in
write(2, buf, 100000) once the 64 KiB pipe is full, the parent's main thread
blocks in wait4(child) and never reaches the read.

Ready line (from a reporter thread of the parent, which then ends):
    ready pid=P child=C pipefd=N
pipefd is the parent's read end of the child's stderr pipe. The child dies
with the parent (PR_SET_PDEATHSIG) and is in the parent's process group.

Run: python3 popen_deadlock.py
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402

CHILD = 'import sys; sys.stderr.write("x"*100000); sys.stderr.flush()'


def main():
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=victim.set_pdeathsig,
    )
    me, rd = os.getpid(), p.stderr.fileno()
    pipe = victim.fd_link(me, rd)

    def check():
        nr, a = victim.task_syscall(p.pid)
        if nr != victim.SYS["write"] or a[0] != 2:
            return False, "child %d not in write(2, ...) (syscall %d)" % (p.pid, nr)
        if victim.fd_link(p.pid, 2) != pipe:
            return False, "child's fd 2 is not the parent's pipe %s" % pipe
        nr, a = victim.task_syscall(me)
        if nr != victim.SYS["wait4"] or a[0] != p.pid:
            return False, "main thread not in wait4(%d) (syscall %d)" % (p.pid, nr)
        return True, "ready pid=%d child=%d pipefd=%d" % (me, p.pid, rd)

    victim.report(check)
    p.wait()  # never returns: nobody reads the child's stderr
    sys.exit("child exited: %r" % p.returncode)


main()
