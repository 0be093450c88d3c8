"""signal_logging: the Patroni hang (patroni PR #3413). Logging goes through
a stdlib QueueHandler into a queue whose _put also spills each record to a
log-shipper pipe. The shipper has stalled, so the main thread blocks in
os.write inside Queue.put, holding the queue's (non-reentrant) mutex. A child
exits; SIGCHLD interrupts the write and the handler logs "child exited":
QueueHandler -> Queue.put -> `with self.not_full:` on the same thread, which
waits for the mutex its own outer Queue.put holds. The helper that let the
child exit blocks SIGCHLD, so the signal goes to the main thread."""

import fcntl
import logging
import logging.handlers
import os
import queue
import signal
import subprocess
import sys
import threading

import _victim

log = logging.getLogger("agent")


class SpillQueue(queue.Queue):
    """A log queue that also spills every record to a shipper pipe."""

    def __init__(self, fd):
        super().__init__()
        self.fd = fd

    def _put(self, item):
        super()._put(item)
        os.write(self.fd, (item.getMessage() + "\n").encode())  # blocks while the shipper stalls


def on_sigchld(signum, frame):
    log.info("child exited")  # re-enters the queue the interrupted code is inside
    os.waitpid(-1, os.WNOHANG)


def fill(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(fd, fcntl.F_SETFL, flags)


def main():
    _victim.setup()
    ship_r, ship_w = os.pipe()  # the shipper end (ship_r) is never read
    fill(ship_w)
    log.addHandler(logging.handlers.QueueHandler(SpillQueue(ship_w)))
    log.setLevel(logging.INFO)
    signal.signal(signal.SIGCHLD, on_sigchld)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    main_thread = threading.main_thread()

    def let_child_exit():
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
        _victim.await_("main in the spill write", lambda: _victim.names(main_thread)[:2] == ["_put", "put"])
        child.stdin.close()
        _victim.await_("handler re-entered put",
                       lambda: _victim.names(main_thread).count("put") == 2 and "on_sigchld" in _victim.names(main_thread))
        _victim.ready(holder="MainThread", holderident=_victim.ident(main_thread), child=child.pid, threads=1)

    threading.Thread(target=let_child_exit, name="let-child-exit", daemon=True).start()
    log.info("agent starting, pid %d", os.getpid())


if __name__ == "__main__":
    main()
