"""py_many_tasks: N pending asyncio tasks (first argument, default 10000),
each awaiting an Event nobody sets, one coroutine deep in a helper, named
"task-0".."task-N-1". The loop's thread then waits in epoll.

Ready line once every task waits:
    ready pid=P tasks=N

Run: python3 py_many_tasks.py [N]
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True


async def hold(ev):
    await ev.wait()


async def one(ev):
    await hold(ev)


async def main(n):
    ev = asyncio.Event()
    tasks = [asyncio.create_task(one(ev), name="task-%d" % i) for i in range(n)]
    while not all(t._fut_waiter is not None for t in tasks):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d tasks=%d\n" % (os.getpid(), n)).encode())
    await ev.wait()


asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000))
