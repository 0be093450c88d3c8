"""pool_dead_feeder: three workers wait in queue.get() for jobs; the feeder
thread put two jobs and died on an exception; the main thread joins the
workers, which will never finish."""

import queue
import threading

import _victim

jobs = queue.Queue()


def worker():
    while True:
        job = jobs.get()
        job * 2
        jobs.task_done()


def feed():
    for n in range(5):
        if n == 2:
            raise ConnectionError("feeder: upstream closed")
        jobs.put(n)


def main():
    _victim.setup()
    threading.excepthook = lambda args: None  # the feeder dies quietly, as in a service with no log
    workers = [threading.Thread(target=worker, name="worker-%d" % i, daemon=True) for i in (1, 2, 3)]
    for w in workers:
        w.start()
    feeder = threading.Thread(target=feed, name="feeder", daemon=True)
    feeder.start()
    feeder.join()
    _victim.await_("workers in get", lambda: all(_victim.names(w)[:2] == ["wait", "get"] for w in workers) and jobs.empty())
    _victim.ready(workers=",".join(w.name for w in workers), threads=len(threading.enumerate()))
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
