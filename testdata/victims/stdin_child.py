"""stdin_child: a parent waits for a child that waits for the parent's input.

The parent starts [sys.executable, '-c', 'import sys; sys.stdin.read()']
with stdin=subprocess.PIPE, never writes to nor closes the pipe, and calls
child.wait(): the child blocks in read(0, ...) on an empty pipe whose only
write end the parent holds, while the parent's main thread blocks in
wait4(child).

Ready line (from a reporter thread of the parent, which then ends):
    ready pid=P child=C pipefd=N
pipefd is the parent's write end of the child's stdin pipe. The child dies
with the parent (PR_SET_PDEATHSIG) and is in the parent's process group.

Run: python3 stdin_child.py
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402


def main():
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        preexec_fn=victim.set_pdeathsig,
    )
    me, wr = os.getpid(), p.stdin.fileno()
    pipe = victim.fd_link(me, wr)

    def check():
        nr, a = victim.task_syscall(p.pid)
        if nr != victim.SYS["read"] or a[0] != 0:
            return False, "child %d not in read(0, ...) (syscall %d)" % (p.pid, nr)
        if victim.fd_link(p.pid, 0) != pipe:
            return False, "child's fd 0 is not the parent's pipe %s" % pipe
        nr, a = victim.task_syscall(me)
        if nr != victim.SYS["wait4"] or a[0] != p.pid:
            return False, "main thread not in wait4(%d) (syscall %d)" % (p.pid, nr)
        return True, "ready pid=%d child=%d pipefd=%d" % (me, p.pid, wr)

    victim.report(check)
    p.wait()  # never returns: the child waits for EOF on stdin
    sys.exit("child exited: %r" % p.returncode)


main()
