"""py_asyncio_mute_socket: an asyncio task holds an asyncio.Lock while
it awaits a reply on a socket whose peer never writes. A forked child
("the server") accepts the connection and sleeps; task "caller" takes
the lock and awaits reader.readline(); task "second" waits for the lock
in `async with lock:`. The loop's thread waits in epoll on the socket.

Ready line, once second waits for the lock:
    ready pid=P server=PID
Run: python3 py_asyncio_mute_socket.py
"""
import asyncio
import os
import signal
import socket
import sys
import time

sys.dont_write_bytecode = True


def serve(srv):
    # The mute server: accept, then never write. It dies with its parent.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    conn, _ = srv.accept()
    while True:
        time.sleep(3600)


async def call(lock, reader, writer):
    async with lock:  # LINE hold
        writer.write(b"ping\n")
        await writer.drain()
        return await reader.readline()  # LINE read


async def second(lock):
    async with lock:  # LINE wait
        pass


async def main(port, server):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lock = asyncio.Lock()
    caller = asyncio.create_task(call(lock, reader, writer), name="caller")
    while not lock.locked():
        await asyncio.sleep(0.01)
    other = asyncio.create_task(second(lock), name="second")
    while not lock._waiters:
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d server=%d\n" % (os.getpid(), server)).encode())
    await asyncio.gather(caller, other)


srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
child = os.fork()
if child == 0:
    serve(srv)
srv.close()
asyncio.run(main(port, child))
