"""What the corpus's Python victims share: the ready line, waiting until a
hang is in place by reading the interpreter's own frames, and the two dumps a
program writes of itself: faulthandler on SIGUSR1 (to $CORPUS_FAULTHANDLER)
and sys._current_frames() printed on SIGUSR2 (to $CORPUS_FRAMES, formatted
with traceback.format_stack per thread ident, and to $CORPUS_GUNICORN in
gunicorn's example worker_int recipe)."""

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback

_keep = []


def setup():
    path = os.environ.get("CORPUS_FAULTHANDLER")
    if path:
        f = open(path, "w")
        _keep.append(f)  # faulthandler writes to the fd: keep the file open
        faulthandler.register(signal.SIGUSR1, file=f, all_threads=True)
    if os.environ.get("CORPUS_FRAMES") or os.environ.get("CORPUS_GUNICORN"):
        signal.signal(signal.SIGUSR2, _dump_frames)


def _dump_frames(signum, frame):
    path = os.environ.get("CORPUS_FRAMES")
    if path:
        names = {t.ident: t.name for t in threading.enumerate()}
        with open(path, "w") as out:
            for ident, f in sys._current_frames().items():
                out.write("Thread %d (%s):\n" % (ident, names.get(ident, "?")))
                out.write("".join(traceback.format_stack(f)))
                out.write("\n")
    path = os.environ.get("CORPUS_GUNICORN")
    if path:
        id2name = dict([(th.ident, th.name) for th in threading.enumerate()])
        code = []
        for threadId, stack in sys._current_frames().items():
            code.append("\n# Thread: %s(%d)" % (id2name.get(threadId, ""), threadId))
            for filename, lineno, name, line in traceback.extract_stack(stack):
                code.append('File: "%s", line %d, in %s' % (filename, lineno, name))
                if line:
                    code.append("  %s" % (line.strip()))
        with open(path, "w") as out:
            out.write("\n".join(code) + "\n")


def top(thread):
    """The innermost Python frame of thread (None while it has none)."""
    return sys._current_frames().get(thread.ident)


def names(thread):
    """Function names of thread's stack, innermost first."""
    f, out = top(thread), []
    while f is not None:
        out.append(f.f_code.co_name)
        f = f.f_back
    return out


def await_(what, cond):
    """Poll until cond() holds; exit 3 rather than print a false ready."""
    deadline = time.monotonic() + 60
    while not cond():
        if time.monotonic() > deadline:
            sys.stderr.write("victim: %s not in place after a minute\n" % what)
            sys.stderr.flush()
            os._exit(3)
        time.sleep(0.01)


def ident(thread):
    return "0x%016x" % thread.ident


def ready(**kv):
    sys.stdout.write("ready pid=%d %s\n" % (os.getpid(), " ".join("%s=%s" % kv_ for kv_ in kv.items())))
    sys.stdout.flush()
