"""py_working: a Python process doing real work (the "not hung" control).

Three threads "hasher-0".."hasher-2" hash forever: each round hashes its own
1 MiB buffer with hashlib.sha256 (which releases the GIL for buffers this
large, so the three hash in parallel) and writes the digest back into the
buffer at a moving offset, so every round hashes different data. The main
thread joins them.

Ready line (from a reporter thread, which then ends), once every hasher has
done a few rounds and its CPU time grows:
    ready pid=P workers=TID,TID,TID
workers are hasher-0..2 in order (threading.get_native_id()).

Run: python3 py_working.py
"""

import hashlib
import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
import victim  # noqa: E402

HASHERS = 3
SIZE = 1 << 20
ROUNDS = 5  # rounds each hasher does before the ready line

tids = [0] * HASHERS
rounds = [0] * HASHERS


def hasher(i):
    tids[i] = threading.get_native_id()
    buf = bytearray(os.urandom(SIZE))
    off = 0
    with open(os.devnull, "w") as sink:
        while True:
            digest = hashlib.sha256(buf).digest()
            buf[off:off + len(digest)] = digest
            off = (off + len(digest)) % (SIZE - len(digest))
            # Real work has more than one step: report each round, so the
            # stack moves between hashing and encoding.
            sink.write(report(digest))
            rounds[i] += 1


def report(digest):
    return json.dumps([{"round": k, "digest": digest.hex()} for k in range(500)])


def main():
    me = os.getpid()
    threads = [threading.Thread(target=hasher, args=(i,), name="hasher-%d" % i)
               for i in range(HASHERS)]
    for t in threads:
        t.start()

    def check():
        if min(rounds) < ROUNDS:
            return False, "rounds %r, want %d each" % (rounds, ROUNDS)
        before = [victim.task_stat(me, tid) for tid in tids]
        done = list(rounds)
        time.sleep(0.1)
        after = [victim.task_stat(me, tid) for tid in tids]
        for tid, b, a, n, m in zip(tids, before, after, done, rounds):
            if b is None or a is None or a[1] <= b[1]:
                return False, "hasher %d's CPU time does not grow (%r, %r)" % (tid, b, a)
            if m <= n:
                return False, "hasher %d did no round in 100 ms" % tid
        return True, "ready pid=%d workers=%s" % (me, victim.tids_field(tids))

    victim.report(check)
    for t in threads:
        t.join()  # never returns


main()
