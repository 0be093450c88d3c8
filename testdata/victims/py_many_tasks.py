"""py_many_tasks: N pending asyncio tasks (first argument, default 10000),
named "task-0".."task-N-1", shaped as a server's are: each owns its
objects — its own Event, which nobody sets, and a buffer of its own —
and waits at a depth of its own, 1 to 5 coroutines above the Event's
wait. The loop's thread then waits in epoll.

Ready line once every task waits:
    ready pid=P tasks=N

Run: python3 py_many_tasks.py [N]
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True


async def hold(ev, buf):
    await ev.wait()


async def one(ev, depth, buf):
    if depth > 1:
        return await one(ev, depth - 1, buf)
    return await hold(ev, buf)


async def main(n):
    ev = asyncio.Event()
    tasks = [asyncio.create_task(one(asyncio.Event(), 1 + i % 5, bytearray(64 + i % 512)), name="task-%d" % i) for i in range(n)]
    while not all(t._fut_waiter is not None for t in tasks):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d tasks=%d\n" % (os.getpid(), n)).encode())
    await ev.wait()


asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000))
