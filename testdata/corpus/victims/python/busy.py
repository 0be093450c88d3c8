"""busy: the spinner thread spins in a pure-Python loop waiting for a flag
nobody sets (on a CPU, holding the GIL most of the time); the main thread
sleeps in a time.sleep loop."""

import threading
import time

import _victim

state = {"ready": False}


def spin_until_ready():
    n = 0
    while not state["ready"]:
        n += 1


def main():
    _victim.setup()
    spinner = threading.Thread(target=spin_until_ready, name="spinner", daemon=True)
    spinner.start()
    _victim.await_("spinner in its loop", lambda: _victim.names(spinner)[:1] == ["spin_until_ready"])
    _victim.ready(spinner="spinner", spinnerident=_victim.ident(spinner), threads=2)
    while True:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
