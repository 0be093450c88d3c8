"""py_asyncio_event: an asyncio task waits for an Event whose setter
failed. Task "setter" would set `ready`, but raises first (a task
exception nobody retrieves); task "waiter" awaits ready.wait() in
wait_ready(); the main task awaits the waiter. The loop's thread then
waits in epoll for ever: idle to the kernel, blocked to the program.

With the argument "timer", task "sleeper" also sleeps an hour: the loop
then waits with a timeout, and something (its timer) is left to run.

Ready line, once the setter is done and the waiter waits:
    ready pid=P
Run: python3 py_asyncio_event.py [timer]
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True


async def set_later(ready):
    await asyncio.sleep(0)
    raise RuntimeError("the setter failed before it set the event")
    ready.set()  # never reached


async def wait_ready(ready):
    await ready.wait()  # LINE wait


async def main():
    ready = asyncio.Event()
    setter = asyncio.create_task(set_later(ready), name="setter")
    waiter = asyncio.create_task(wait_ready(ready), name="waiter")
    if sys.argv[1:] == ["timer"]:
        asyncio.create_task(asyncio.sleep(3600), name="sleeper")
    while not (setter.done() and waiter._fut_waiter is not None):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d\n" % os.getpid()).encode())
    await waiter


asyncio.run(main())
