"""tcp_stall: a client blocks in recv on a server that never answers.

A child process (the server: [sys.executable, '-c', SERVER]) listens on
127.0.0.1, port 0 (ephemeral), tells the parent its port on a pipe,
accepts one connection and then sleeps forever (time.sleep) without reading
or answering. The parent (the client) connects, sends
"GET / HTTP/1.0\r\n\r\n" and blocks in recv (recvfrom(2)) on the socket.

Ready line (from a reporter thread of the client, which then ends):
    ready pid=P server=S port=N fd=F
F is the client's socket. The server keeps its listening socket and the
accepted one open, dies with the client (PR_SET_PDEATHSIG) and is in its
process group.

Run: python3 tcp_stall.py
"""

import os
import socket
import subprocess
import sys

sys.dont_write_bytecode = True
import victim  # noqa: E402

SERVER = r"""
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
s.listen(1)
sys.stdout.write("%d\n" % s.getsockname()[1])
sys.stdout.flush()
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)  # let go of the port pipe
os.close(null)
conn, _ = s.accept()
while True:
    time.sleep(3600)
"""

REQUEST = b"GET / HTTP/1.0\r\n\r\n"


def main():
    srv = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        preexec_fn=victim.set_pdeathsig,
    )
    line = srv.stdout.readline()
    srv.stdout.close()
    if not line.strip():
        sys.exit("error: the server did not report its port")
    port = int(line)

    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(REQUEST)
    me, fd = os.getpid(), c.fileno()

    def check():
        nr, a = victim.task_syscall(me)
        if nr != victim.SYS["recvfrom"] or a[0] != fd:
            return False, "client not in recvfrom(%d, ...) (syscall %d)" % (fd, nr)
        # The server sleeps only after accept() returned.
        nr, a = victim.task_syscall(srv.pid)
        if nr not in victim.SLEEPS:
            return False, "server %d not in nanosleep (syscall %d)" % (srv.pid, nr)
        return True, "ready pid=%d server=%d port=%d fd=%d" % (me, srv.pid, port, fd)

    victim.report(check)
    data = c.recv(4096)  # never returns: the server neither answers nor closes
    sys.exit("recv returned %r" % data)


main()
