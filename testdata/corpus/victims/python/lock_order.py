"""lock_order: pystack's deadlock tutorial shape. Two threads run one
function, worker(first, second), with the two locks swapped; each takes its
outer `with first:` and waits at the inner `with second:`. A barrier (instead
of the tutorial's sleep) makes sure both hold their outer lock first."""

import threading

import _victim

lock_a = threading.Lock()
lock_b = threading.Lock()
both_outer = threading.Barrier(2)


def worker(first, second):
    with first:
        both_outer.wait()
        with second:
            pass


def main():
    _victim.setup()
    t1 = threading.Thread(target=worker, args=(lock_a, lock_b), name="worker-1", daemon=True)
    t2 = threading.Thread(target=worker, args=(lock_b, lock_a), name="worker-2", daemon=True)
    t1.start()
    t2.start()
    _victim.await_("both at the inner with",
                   lambda: all(_victim.names(t)[:1] == ["worker"] and lock_a.locked() and lock_b.locked()
                               and both_outer.n_waiting == 0 for t in (t1, t2)))
    _victim.ready(cycle="worker-1,worker-2", identa=_victim.ident(t1), identb=_victim.ident(t2),
                  threads=len(threading.enumerate()))
    t1.join()


if __name__ == "__main__":
    main()
