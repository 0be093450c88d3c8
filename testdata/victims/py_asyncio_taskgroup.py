"""py_asyncio_taskgroup: a TaskGroup child awaits a future nobody
resolves. main makes the future, opens a TaskGroup and starts two
children: "quick" ends at once, "fetch" awaits the future. main, the
only code that holds the future, waits in the TaskGroup's __aexit__
for fetch: nothing is left that could resolve it. The loop's thread
waits in epoll with no timeout, on nothing but its own wake-up socket.

Ready line, once fetch waits and quick is done:
    ready pid=P
Run: python3 py_asyncio_taskgroup.py (3.11+)
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True


async def fetch(reply):
    return await reply  # LINE await


async def quick():
    return 1


async def report(fetching):
    while fetching._fut_waiter is None:
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d\n" % os.getpid()).encode())


async def main():
    reply = asyncio.get_running_loop().create_future()
    async with asyncio.TaskGroup() as tg:
        fetching = tg.create_task(fetch(reply), name="fetch")
        tg.create_task(quick(), name="quick")
        tg.create_task(report(fetching), name="report")
    reply.set_result(None)  # never reached


asyncio.run(main())
