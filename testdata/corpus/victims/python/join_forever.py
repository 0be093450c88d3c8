"""join_forever: the main thread joins the reader thread, which is blocked
forever in os.read on a pipe whose write end this process holds and never
writes."""

import os
import threading

import _victim


def read_header(fd):
    return os.read(fd, 16)


def main():
    _victim.setup()
    r, w = os.pipe()
    reader = threading.Thread(target=read_header, args=(r,), name="reader", daemon=True)
    reader.start()
    main_thread = threading.main_thread()

    def report():
        _victim.await_("reader in read, main in join",
                       lambda: _victim.names(reader)[:1] == ["read_header"] and "join" in _victim.names(main_thread))
        _victim.ready(waiter="MainThread", blocked="reader", blockedident=_victim.ident(reader), threads=2)

    threading.Thread(target=report, name="report", daemon=True).start()
    reader.join()
    os.close(w)


if __name__ == "__main__":
    main()
