"""sleeploop: the only thread polls for a file that never appears, sleeping
half a second between looks: idle."""

import os
import threading
import time

import _victim


def wait_for_file(path):
    while not os.path.exists(path):
        time.sleep(0.5)


def main():
    _victim.setup()
    main_thread = threading.main_thread()

    def report():
        _victim.await_("main sleeping", lambda: _victim.names(main_thread)[:1] == ["wait_for_file"])
        _victim.ready(main="MainThread", threads=1)

    threading.Thread(target=report, name="report", daemon=True).start()
    wait_for_file("/nonexistent/corpus-ready.flag")


if __name__ == "__main__":
    main()
