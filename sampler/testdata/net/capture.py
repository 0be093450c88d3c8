#!/usr/bin/env python3
"""capture.py makes the fixtures under sampler/testdata/net and
sampler/testdata/fdinfo from this machine's kernel.

Usage, from the repository root (as any user):

    python3 sampler/testdata/net/capture.py

It opens, in its own process, TCP sockets in the states the parsers must
read (LISTEN and ESTABLISHED on 127.0.0.1 and ::1, a dual-stack listener
with an IPv4 client, unread data in a receive queue, a sender stuck on a
full receiver so that its send queue holds unacknowledged bytes,
FIN_WAIT2/CLOSE_WAIT, TIME_WAIT) and one descriptor of each kind whose
fdinfo has its own lines (pipe, regular file, socket, eventfd, epoll, a
live and a reaped process's pidfd, inotify, timerfd), then copies
/proc/self/net/tcp, /proc/self/net/tcp6 and /proc/self/fdinfo/FD.
Whatever else is in the network namespace lands in the capture too,
including TIME_WAIT entries left by earlier runs.

Python's epoll stores the descriptor in the low 32 bits of the event's
data and leaves the high bits as they were on its stack: the epoll
fixture's data fields carry that garbage, as a real program's might.
"""
import ctypes
import os
import select
import socket
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
fdinfo_dir = os.path.join(os.path.dirname(here), "fdinfo")
keep = []


def pair(family, host, listen_host=None):
    l = socket.socket(family, socket.SOCK_STREAM)
    l.bind((listen_host if listen_host is not None else host, 0))
    l.listen(4)
    c = socket.socket(family if listen_host is None or family == socket.AF_INET else socket.AF_INET,
                      socket.SOCK_STREAM)
    c.connect((host, l.getsockname()[1]))
    s, _ = l.accept()
    keep.extend([l, c, s])
    return l, c, s


# LISTEN and ESTABLISHED on 127.0.0.1; the accepted end holds 5 unread bytes.
l4, c4, s4 = pair(socket.AF_INET, "127.0.0.1")
c4.send(b"hello")
# LISTEN and ESTABLISHED on ::1.
l6, c6, s6 = pair(socket.AF_INET6, "::1")
# A dual-stack listener on :: with an IPv4 client: the accepted end is
# ::ffff:127.0.0.1 in tcp6, the client 127.0.0.1 in tcp.
dl = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
dl.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
dl.bind(("::", 0))
dl.listen(4)
dc = socket.create_connection(("127.0.0.1", dl.getsockname()[1]))
ds, _ = dl.accept()
keep.extend([dl, dc, ds])
# FIN_WAIT2 / CLOSE_WAIT: one end shuts down, the other does not.
_, hc, hs = pair(socket.AF_INET, "127.0.0.1")
hc.shutdown(socket.SHUT_WR)
# A full receiver: the client sends until the kernel refuses, and what the
# server's receive buffer cannot take stays unacknowledged in the client's
# send queue.
_, fc, fs = pair(socket.AF_INET, "127.0.0.1")
fc.setblocking(False)
try:
    while True:
        fc.send(b"x" * 65536)
except BlockingIOError:
    pass
# TIME_WAIT: the active closer of a finished connection.
_, tc, ts = pair(socket.AF_INET, "127.0.0.1")
tc.close()
ts.close()
time.sleep(0.2)

libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
os.write(w, b"0123456789")
f = os.open(__file__, os.O_RDONLY)
os.lseek(f, 7, os.SEEK_SET)
efd = os.eventfd(26, os.EFD_NONBLOCK)  # printed in hex: 1a
pidfd = os.pidfd_open(os.getpid())
child = os.fork()
if child == 0:
    os._exit(0)
gone = os.pidfd_open(child)
os.waitpid(child, 0)  # reaped: its pidfd says Pid: -1
ep = select.epoll()
ep.register(r, select.EPOLLIN)
ep.register(efd, select.EPOLLIN | select.EPOLLET)
ep.register(s4.fileno(), select.EPOLLIN | select.EPOLLOUT | select.EPOLLRDHUP)
ino = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(ino, here.encode(), 0x100 | 0x200)  # IN_CREATE|IN_DELETE
tfd = libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC


class timespec(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]


class itimerspec(ctypes.Structure):
    _fields_ = [("interval", timespec), ("value", timespec)]


libc.timerfd_settime(tfd, 0, ctypes.byref(itimerspec(timespec(1, 0), timespec(3600, 0))), None)

fds = {
    "pipe-read": r, "pipe-write": w, "file": f, "socket": s4.fileno(),
    "eventfd": efd, "pidfd": pidfd, "pidfd-exited": gone, "epoll": ep.fileno(), "inotify": ino,
    "timerfd": tfd,
}
for name, fd in fds.items():
    with open(f"/proc/self/fdinfo/{fd}", "rb") as src, open(os.path.join(fdinfo_dir, name), "wb") as dst:
        dst.write(src.read())
for name in ("tcp", "tcp6"):
    with open(f"/proc/self/net/{name}", "rb") as src, open(os.path.join(here, name), "wb") as dst:
        dst.write(src.read())
print("captured", file=sys.stderr)
