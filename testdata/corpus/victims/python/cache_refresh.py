"""cache_refresh: the refresher holds the module-level RLock cache_lock in
refresh() while it waits on a socket recv that never returns; three request
threads wait at `with cache_lock:` in handle(), another function; the main
thread joins the refresher."""

import socket
import threading

import _victim

cache_lock = threading.RLock()
cache = {}


def refresh(conn):
    with cache_lock:
        data = conn.recv(4096)  # the upstream never answers
        cache.update(line.split("=", 1) for line in data.decode().splitlines())


def handle(key):
    with cache_lock:
        return cache.get(key)


def main():
    _victim.setup()
    upstream, _peer = socket.socketpair()
    refresher = threading.Thread(target=refresh, args=(upstream,), name="refresher", daemon=True)
    refresher.start()
    _victim.await_("refresher in recv", lambda: _victim.names(refresher)[:1] == ["refresh"])
    requests = []
    for i, key in enumerate(["a", "b", "c"], 1):
        t = threading.Thread(target=handle, args=(key,), name="request-%d" % i, daemon=True)
        t.start()
        requests.append(t)
    _victim.await_("requests at with cache_lock", lambda: all(_victim.names(t)[:1] == ["handle"] for t in requests))
    _victim.ready(holder="refresher", holderident=_victim.ident(refresher),
                  waiters=",".join(t.name for t in requests), threads=len(threading.enumerate()))
    refresher.join()
    _peer.close()


if __name__ == "__main__":
    main()
