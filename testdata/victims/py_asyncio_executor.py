"""py_asyncio_executor: an asyncio task awaits a thread-pool call whose
thread waits for a lock. Thread "keeper" takes `state_lock` and sleeps
holding it; task "handler" awaits loop.run_in_executor(None, load),
and load() waits in `with state_lock:` on the pool's thread. The
loop's thread waits in epoll for the pool's answer.

Ready line, once the pool's thread waits for the lock:
    ready pid=P
Run: python3 py_asyncio_executor.py
"""
import asyncio
import os
import sys
import threading
import time

sys.dont_write_bytecode = True

state_lock = threading.Lock()
waiting = threading.Event()


def keep():
    with state_lock:
        while True:
            time.sleep(3600)  # LINE keep


def load():
    waiting.set()
    with state_lock:  # LINE load
        return 1


async def handle():
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, load)  # LINE await


async def main():
    threading.Thread(target=keep, name="keeper", daemon=True).start()
    while not state_lock.locked():
        await asyncio.sleep(0.01)
    handler = asyncio.create_task(handle(), name="handler")
    while not waiting.is_set():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    os.write(1, ("ready pid=%d\n" % os.getpid()).encode())
    await handler


asyncio.run(main())
