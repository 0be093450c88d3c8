"""py_many_tasks: N pending asyncio tasks (first argument, default 10000),
named "task-0".."task-N-1", shaped as a server's are: each owns its
objects — its own Event, which nobody sets, and a buffer of its own —
and waits at a depth of its own, 1 to 5 coroutines above the Event's
wait; one task in five holds an asyncio.Lock of its own across the wait
(`async with`), as a handler guards its connection. The loop's thread
then waits in epoll. With a second argument, a thread "heartbeat" stamps
that file every 5 ms (victim.heartbeat).

Ready line once every task waits:
    ready pid=P tasks=N

Run: python3 py_many_tasks.py [N [HEARTBEAT_FILE]]
"""
import asyncio
import os
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402


async def hold(ev, buf):
    await ev.wait()


async def one(ev, depth, buf):
    if depth > 1:
        return await one(ev, depth - 1, buf)
    return await hold(ev, buf)


async def guarded(ev, depth, buf, lock):
    async with lock:
        return await one(ev, depth, buf)


def handler(i):
    ev, buf = asyncio.Event(), bytearray(64 + i % 512)
    if i % 5 == 2:
        return guarded(ev, 1 + i % 5, buf, asyncio.Lock())
    return one(ev, 1 + i % 5, buf)


async def main(n):
    ev = asyncio.Event()
    tasks = [asyncio.create_task(handler(i), name="task-%d" % i) for i in range(n)]
    while not all(t._fut_waiter is not None for t in tasks):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d tasks=%d\n" % (os.getpid(), n)).encode())
    await ev.wait()


if len(sys.argv) > 2:
    threading.Thread(target=victim.heartbeat, args=(sys.argv[2],), name="heartbeat", daemon=True).start()
asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000))
