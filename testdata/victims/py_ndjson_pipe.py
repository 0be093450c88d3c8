"""py_ndjson_pipe: NDJSON writers serialized by one lock, stdout a slow pipe.

Four threads "writer-0".."writer-3" write NDJSON records to sys.stdout,
each record under one shared threading.Lock (`with out_lock:` around
`sys.stdout.write(line)` in writer()).

sys.stdout is line-buffered, so each record is one write(2) on fd 1, made
inside sys.stdout.write. fd 1 is not the test's pipe: the victim saves the
original stdout (os.dup), starts a consumer child (python3 -c ...) that
reads one line every 10 s from its stdin, and re-points fd 1 (os.dup2) to
the write end of a pipe whose read end is the consumer's stdin. The pipe
fills within milliseconds; then the thread inside the with-block blocks in
write(1, ...) holding out_lock and the other three block at the
`with out_lock:` line (futex on the lock's semaphore). The consumer frees a
pipe page only every few minutes (one ~80-byte line per 10 s), so the
picture holds for a test's lifetime. The main thread joins the writers.

Ready line (from a reporter thread, to the ORIGINAL stdout; it then ends):
    ready pid=P holder=TID waiters=TID,TID,TID consumer=CPID lockline=N
holder is the writer blocked in write(1, ...), waiters the writers blocked
in futex on the same address (ascending), consumer the child's pid, lockline the line
of this file holding `with out_lock:`. TIDs are threading.get_native_id().
The consumer dies with the victim (PR_SET_PDEATHSIG) and is in the
victim's process group.

Run: python3 py_ndjson_pipe.py
"""

import json
import os
import subprocess
import sys
import threading

sys.dont_write_bytecode = True
import victim  # noqa: E402

WRITERS = 4

# The consumer: one line (read a byte at a time, so nothing else leaves the
# pipe) every 10 s.
CONSUMER = """
import os, time
while True:
    while True:
        b = os.read(0, 1)
        if not b:
            raise SystemExit(0)
        if b == b"\\n":
            break
    time.sleep(10)
"""

out_lock = threading.Lock()
tids = [0] * WRITERS
started = threading.Barrier(WRITERS + 1)


def writer(i):
    tids[i] = threading.get_native_id()
    started.wait()
    seq = 0
    while True:
        line = json.dumps({"writer": i, "seq": seq, "event": "page.rendered", "ok": True}) + "\n"
        with out_lock:
            sys.stdout.write(line)
        seq += 1


def main():
    me = os.getpid()
    lockline = victim.source_line(__file__, "with out_lock:")

    orig = os.dup(1)  # the test's pipe: the ready line goes there
    rd, wr = os.pipe()
    consumer = subprocess.Popen(
        [sys.executable, "-c", CONSUMER],
        stdin=rd,
        stdout=subprocess.DEVNULL,
        preexec_fn=victim.set_pdeathsig,
    )
    os.close(rd)
    os.dup2(wr, 1)
    os.close(wr)
    sys.stdout.reconfigure(line_buffering=True)  # one write(2) per record
    pipe = victim.fd_link(me, 1)

    threads = [threading.Thread(target=writer, args=(i,), name="writer-%d" % i)
               for i in range(WRITERS)]
    for t in threads:
        t.start()
    started.wait()

    def check():
        if victim.fd_link(consumer.pid, 0) != pipe:
            return False, "consumer %d's fd 0 is not our fd 1 %s" % (consumer.pid, pipe)
        nr, _ = victim.task_syscall(consumer.pid)
        if nr not in victim.SLEEPS + (victim.SYS["read"],):
            return False, "consumer %d neither sleeping nor reading (syscall %d)" % (consumer.pid, nr)
        holder, waiters, addrs = None, [], set()
        for tid in tids:
            nr, a = victim.task_syscall(me, tid)
            if nr == victim.SYS["write"] and a[0] == 1:
                if holder is not None:
                    return False, "writers %d and %d both in write(1, ...)" % (holder, tid)
                holder = tid
            elif nr == victim.FUTEX:
                waiters.append(tid)
                addrs.add(a[0])
            else:
                return False, "writer %d neither in write(1, ...) nor in futex (syscall %d)" % (tid, nr)
        if holder is None:
            return False, "no writer in write(1, ...)"
        if len(addrs) != 1:
            return False, "waiters %r in futex on %d addresses" % (waiters, len(addrs))
        if not out_lock.locked():
            return False, "out_lock is free"
        return True, "ready pid=%d holder=%d waiters=%s consumer=%d lockline=%d" % (
            me, holder, victim.tids_field(sorted(waiters)), consumer.pid, lockline)

    victim.report_fd(check, orig)
    for t in threads:
        t.join()  # never returns


main()
