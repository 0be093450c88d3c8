"""py_asyncio_abba: two asyncio tasks take two asyncio.Locks in opposite
orders, and each waits for the other's: task "first" holds lock_a and
waits in `async with lock_b:`, task "second" the other way round. Beside
them, task "sleeper" awaits asyncio.sleep(3600) and task "on-event"
awaits an Event nobody sets. The loop's thread then waits in epoll for
ever: nothing runs.

Ready line, from a task that ends after printing it, once both locks
have a waiter:
    ready pid=P locka=ADDR lockb=ADDR
ADDR is id() of each lock: its address.

Run: python3 py_asyncio_abba.py
"""
import asyncio
import os
import sys

sys.dont_write_bytecode = True


async def take(first, second, both):
    async with first:
        await both.wait()
        async with second:  # LINE inner
            pass


async def main():
    lock_a, lock_b = asyncio.Lock(), asyncio.Lock()
    both = asyncio.Event()
    never = asyncio.Event()
    t1 = asyncio.create_task(take(lock_a, lock_b, both), name="first")
    t2 = asyncio.create_task(take(lock_b, lock_a, both), name="second")
    sleeper = asyncio.create_task(asyncio.sleep(3600), name="sleeper")
    waiter = asyncio.create_task(never.wait(), name="on-event")
    while not (lock_a.locked() and lock_b.locked()):
        await asyncio.sleep(0.01)
    both.set()
    while not (lock_a._waiters and lock_b._waiters):
        await asyncio.sleep(0.01)
    os.write(1, ("ready pid=%d locka=0x%x lockb=0x%x\n" % (os.getpid(), id(lock_a), id(lock_b))).encode())
    await asyncio.gather(t1, t2, sleeper, waiter)


asyncio.run(main())
