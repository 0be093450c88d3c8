"""event_wait: the main thread waits on a threading.Event with no timeout;
nothing in the process could ever set it (no other thread, no handler)."""

import threading

import _victim


def main():
    _victim.setup()
    started = threading.Event()
    main_thread = threading.main_thread()

    def report():
        _victim.await_("main in Event.wait", lambda: _victim.names(main_thread)[:2] == ["wait", "wait"])
        _victim.ready(main="MainThread", threads=1)

    threading.Thread(target=report, name="report", daemon=True).start()
    started.wait()


if __name__ == "__main__":
    main()
