"""run_capture_stdin: subprocess.run(capture_output=True) of a child that
waits for input on a stdin pipe its parent holds open.

The parent was started, as services often are, with its standard input a
pipe whose write end it keeps (here it makes that pipe itself: fd 0 is the
read end, and it holds the write end). It runs

    subprocess.run([sys.executable, "-c", "import sys; sys.stdin.read()"],
                   capture_output=True)

The child inherits fd 0 and blocks in read(0, ...) on an empty pipe whose
only write end the parent holds; the parent's communicate() polls the
child's stdout and stderr pipes, which only the child writes. Neither can
move: a deadlock across two processes, through a poll().

Ready line (from a reporter thread of the parent, which then ends):
    ready pid=P child=C stdin=pipe:[N] wfd=W
W is the parent's write end of the child's stdin pipe. The child dies with
the parent (PR_SET_PDEATHSIG) and is in the parent's process group.

Run: python3 run_capture_stdin.py
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402

POLLS = {"x86_64": (7, 271), "amd64": (7, 271), "aarch64": (73,), "arm64": (73,)}


def main():
    r, w = os.pipe()
    os.dup2(r, 0)
    os.close(r)
    me = os.getpid()
    stdin = victim.fd_link(me, 0)
    polls = POLLS[os.uname().machine]
    state = {}

    def check():
        kids = [p for p in victim.pids() if (victim.stat(p) or ("", "", 0, 0))[2] == me]
        if len(kids) != 1:
            return False, "children %r" % kids
        child = kids[0]
        nr, a = victim.task_syscall(child)
        if nr != victim.SYS["read"] or a[0] != 0:
            return False, "child %d not in read(0, ...) (syscall %d)" % (child, nr)
        if victim.fd_link(child, 0) != stdin:
            return False, "child's fd 0 is not %s" % stdin
        nr, a = victim.task_syscall(me)
        if nr not in polls:
            return False, "main thread not in poll (syscall %d)" % nr
        return True, "ready pid=%d child=%d stdin=%s wfd=%d" % (me, child, stdin, w)

    victim.report(check)
    subprocess.run(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        capture_output=True,
        preexec_fn=victim.set_pdeathsig,
    )
    sys.exit("child exited")


main()
