#!/bin/sh
# Recaptures the dumps in this directory from victim.py. Needs root (or
# CAP_SYS_PTRACE), py-spy, and the pyenv Pythons named below.
#   sh capture.sh
# Each victim run leaves RUN.ids.json beside its dumps (RUN.txt, RUN.json,
# RUN-color.txt, ...): victim.py's own record of its threads' TIDs and
# idents, which the tests join against.
set -eu
cd "$(dirname "$0")"
PY=${PYENV_ROOT:-$HOME/.pyenv}/versions

# start NAME PYTHON MODE: run the victim, wait for "ready", set $pid.
start() {
	"$2" victim.py "$3" >"$1.out" 2>"$1.err" &
	pid=$!
	i=0
	until grep -qs '^ready$' "$1.out"; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "victim $1 never got ready" >&2; kill "$pid"; exit 1; }
		sleep 0.1
	done
	head -n 1 "$1.out" >"$1.ids.json"
	rm "$1.out"
}

stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# py-spy against 3.12: JSON, text, forced colour, --locals, --native.
start pyspy-3.12 "$PY/3.12.1/bin/python" hang
py-spy dump --pid "$pid" --json >pyspy-3.12.json
py-spy dump --pid "$pid" >pyspy-3.12.txt
CLICOLOR_FORCE=1 py-spy dump --pid "$pid" >pyspy-3.12-color.txt
py-spy dump --pid "$pid" --locals >pyspy-3.12-locals.txt
py-spy dump --pid "$pid" --native >pyspy-3.12-native.txt
stop
rm -f pyspy-3.12.err

# py-spy --subprocesses: the parent's dump, then the child's.
start pyspy-3.12-subprocesses "$PY/3.12.1/bin/python" parent
sleep 0.3 # let the child reach its read
py-spy dump --pid "$pid" --subprocesses >pyspy-3.12-subprocesses.txt
stop
rm -f pyspy-3.12-subprocesses.err

# py-spy against 3.10 with --nonblocking: no OS thread ids, so hex ids.
start pyspy-3.10-nonblocking "$PY/3.10.13/bin/python" hang
py-spy dump --pid "$pid" --nonblocking >pyspy-3.10-nonblocking.txt
py-spy dump --pid "$pid" --nonblocking --json >pyspy-3.10-nonblocking.json
stop
rm -f pyspy-3.10-nonblocking.err

# faulthandler.dump_traceback_later(repeat=True): two dumps on stderr.
start faulthandler-later-3.12 "$PY/3.12.1/bin/python" later
wait "$pid"
mv faulthandler-later-3.12.err faulthandler-later-3.12.txt

# faulthandler.register(SIGUSR1), signalled twice: two dumps, each with a
# "Current thread".
start faulthandler-signal-3.13 "$PY/3.13.0/bin/python" signal
kill -USR1 "$pid"
sleep 0.3
kill -USR1 "$pid"
sleep 0.3
stop
mv faulthandler-signal-3.13.err faulthandler-signal-3.13.txt

# The gunicorn-style sys._current_frames() recipe.
"$PY/3.12.1/bin/python" victim.py recipe >current-frames-3.12.out
head -n 1 current-frames-3.12.out >current-frames-3.12.ids.json
tail -n +3 current-frames-3.12.out >current-frames-3.12.txt
rm current-frames-3.12.out
