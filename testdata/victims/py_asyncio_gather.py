"""py_asyncio_gather: asyncio tasks that await each other. Task "ping"
awaits asyncio.gather(pong, worker) — pong among the tasks it gathers —
and task "pong" awaits ping itself: neither can finish first. Task
"worker" finishes; the gather still waits for pong. The loop's thread
then waits in epoll for ever.

Ready line, from the main coroutine, once ping and pong both wait:
    ready pid=P
Run: python3 py_asyncio_gather.py
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True

tasks = {}


async def ping():
    await asyncio.sleep(0)
    await asyncio.gather(tasks["pong"], tasks["worker"])  # LINE ping


async def pong():
    await asyncio.sleep(0)
    await tasks["ping"]  # LINE pong


async def work():
    return 42


async def main():
    tasks["worker"] = asyncio.create_task(work(), name="worker")
    tasks["ping"] = asyncio.create_task(ping(), name="ping")
    tasks["pong"] = asyncio.create_task(pong(), name="pong")
    while not all(t._fut_waiter is not None for t in (tasks["ping"], tasks["pong"])):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d\n" % os.getpid()).encode())
    await tasks["ping"]


asyncio.run(main())
