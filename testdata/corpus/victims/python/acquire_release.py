"""acquire_release: job_lock.acquire() in start_job(), its release() in
end_job(), another function. The runner thread acquired it and waits on a
socket for the job's input before it would call end_job(); two submitters
wait in job_lock.acquire() in submit()."""

import socket
import threading

import _victim

job_lock = threading.Lock()


def end_job():
    job_lock.release()


def start_job(conn):
    job_lock.acquire()
    conn.recv(1)  # the job's input never comes; end_job() is never reached
    end_job()


def submit(n):
    job_lock.acquire()
    try:
        return n * 2
    finally:
        job_lock.release()


def main():
    _victim.setup()
    conn, _peer = socket.socketpair()
    runner = threading.Thread(target=start_job, args=(conn,), name="runner", daemon=True)
    runner.start()
    _victim.await_("runner in recv", lambda: _victim.names(runner)[:1] == ["start_job"] and job_lock.locked())
    subs = []
    for i in (1, 2):
        t = threading.Thread(target=submit, args=(i,), name="submit-%d" % i, daemon=True)
        t.start()
        subs.append(t)
    _victim.await_("submitters in acquire", lambda: all(_victim.names(t)[:1] == ["submit"] for t in subs))
    _victim.ready(holder="runner", holderident=_victim.ident(runner),
                  waiters=",".join(t.name for t in subs), threads=len(threading.enumerate()))
    runner.join()
    _peer.close()


if __name__ == "__main__":
    main()
