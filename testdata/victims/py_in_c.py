"""py_in_c: a Python thread blocked inside C, where its Python stack ends.

reader calls sock.recv on one end of a socketpair whose other end nobody
writes: its Python stack stops at the recv line, and the C under it — the
socket module's sock_recv, libc's recv — is what a native stack adds. The
main thread joins it.

Ready line, once reader is in its recvfrom (its /proc syscall file says
so):
    ready pid=P reader=TID
"""
import os
import socket
import threading
import time

a, b = socket.socketpair()
tid = []


def read():
    tid.append(threading.get_native_id())
    a.recv(10)


t = threading.Thread(target=read, name="reader", daemon=True)
t.start()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if tid:
        try:
            with open(f"/proc/self/task/{tid[0]}/syscall") as f:
                if f.read().split()[0] == "45":  # recvfrom on x86-64
                    break
        except OSError:
            pass
    time.sleep(0.01)
print(f"ready pid={os.getpid()} reader={tid[0]}", flush=True)
t.join()
