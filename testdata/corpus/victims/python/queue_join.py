"""queue_join: the main thread waits in queue.join() for three tasks; the two
workers died on an exception before task_done(), so no thread is left that
could finish them."""

import queue
import threading

import _victim

tasks = queue.Queue()


def worker():
    while True:
        item = tasks.get()
        if item is not None:
            raise ValueError("worker: bad task %r" % (item,))  # dies before task_done()
        tasks.task_done()


def main():
    _victim.setup()
    threading.excepthook = lambda args: None
    for item in ("a", "b", "c"):
        tasks.put(item)
    workers = [threading.Thread(target=worker, name="worker-%d" % i, daemon=True) for i in (1, 2)]
    for w in workers:
        w.start()
    main_thread = threading.main_thread()

    def report():
        _victim.await_("workers dead, main in join",
                       lambda: not any(w.is_alive() for w in workers) and _victim.names(main_thread)[:2] == ["wait", "join"])
        _victim.ready(main="MainThread", threads=1)

    threading.Thread(target=report, name="report", daemon=True).start()
    tasks.join()


if __name__ == "__main__":
    main()
