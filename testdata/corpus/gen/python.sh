#!/usr/bin/env bash
# python.sh: the Python dumps. Runs every victim under every Python of
# $PYTHONS, waits for its ready line (and for its helper threads to be gone),
# then takes, from one process:
#   dumps/py-spy              py-spy dump (text; busy and sleeploop also a series .1 .2 .3)
#   dumps/py-spy-json         py-spy dump --json
#   dumps/py-spy-locals       py-spy dump --locals
#   dumps/py-spy-native       py-spy dump --native
#   dumps/py-spy-nonblocking  py-spy dump --nonblocking
#   dumps/py-spy-subprocesses py-spy dump --subprocesses (subprocess_stdin only)
#   dumps/faulthandler        faulthandler.register(SIGUSR1, all_threads=True) output
#   dumps/current-frames      the program's SIGUSR2 print of sys._current_frames()
#                             (format_stack per ident; .gunicorn: gunicorn's recipe)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/expect_py.sh"

VICTIMS_PY=${VICTIMS_PY:-"cache_refresh lock_order acquire_release signal_logging pool_dead_feeder queue_join event_wait join_forever subprocess_stdin busy sleeploop"}
mkdir -p "$DUMPS"/{py-spy,py-spy-json,py-spy-locals,py-spy-native,py-spy-nonblocking,py-spy-subprocesses,faulthandler,current-frames,not-a-dump}

# pyspy OUT ARGS...: one py-spy dump of the victim; stdout is the dump.
pyspy() { local out=$1; shift; run 60 py-spy dump --pid "$VPID" "$@" >"$out" 2>"$WORK/run/py-spy.err" || { cat "$WORK/run/py-spy.err" >&2; die "py-spy $* failed"; }; }

# await_file FILE: wait until FILE is non-empty and stops growing.
await_file() {
	local f=$1 i last=-1 size
	for i in $(seq 100); do
		size=$(stat -c %s "$f" 2>/dev/null || echo 0)
		[ "$size" -gt 0 ] && [ "$size" = "$last" ] && return 0
		last=$size
		sleep 0.1
	done
	return 1
}

# await_threads N: wait until the victim has N OS threads (its helper threads gone).
await_threads() {
	local i
	for i in $(seq 100); do
		[ "$(ls "/proc/$VPID/task" | wc -l)" = "$1" ] && return 0
		sleep 0.1
	done
	die "pid $VPID: not $1 threads"
}

for pv in $PYTHONS; do
	py=$PYENV_ROOT/versions/$pv/bin/python3
	[ -x "$py" ] || die "no $py"
	short=py${pv%.*}
	echo "python $pv: $(run 30 "$py" -c 'import sys; print(sys.version.replace(chr(10), " "))')" >>"$WORK/versions.txt"
	for v in $VICTIMS_PY; do
		log "$short: $v"
		fh=$DUMPS/faulthandler/$v.$short.txt
		cf=$DUMPS/current-frames/$v.$short.txt
		gu=$DUMPS/current-frames/$v.$short.gunicorn.txt
		rm -f "$fh" "$cf" "$gu"
		start "$v" env -C "$VICTIMS/python" CORPUS_FAULTHANDLER="$fh" CORPUS_FRAMES="$cf" CORPUS_GUNICORN="$gu" "$py" "$v.py"
		await_threads "$R_threads"

		pyspy "$DUMPS/py-spy/$v.$short.txt"
		expect_py "$v" pyspy-text "$DUMPS/py-spy/$v.$short.txt" >"$DUMPS/py-spy/$v.$short.expect"
		pyspy "$DUMPS/py-spy-json/$v.$short.json" --json
		expect_py "$v" pyspy-json "$DUMPS/py-spy-json/$v.$short.json" >"$DUMPS/py-spy-json/$v.$short.expect"
		pyspy "$DUMPS/py-spy-locals/$v.$short.txt" --locals
		expect_py "$v" pyspy-locals "$DUMPS/py-spy-locals/$v.$short.txt" >"$DUMPS/py-spy-locals/$v.$short.expect"
		pyspy "$DUMPS/py-spy-native/$v.$short.txt" --native
		expect_py "$v" pyspy-native "$DUMPS/py-spy-native/$v.$short.txt" >"$DUMPS/py-spy-native/$v.$short.expect"
		pyspy "$DUMPS/py-spy-nonblocking/$v.$short.txt" --nonblocking
		expect_py "$v" pyspy-nonblocking "$DUMPS/py-spy-nonblocking/$v.$short.txt" >"$DUMPS/py-spy-nonblocking/$v.$short.expect"
		case $v in
		busy | sleeploop)
			for i in 1 2 3; do
				[ $i -gt 1 ] && sleep 1
				pyspy "$DUMPS/py-spy/$v-series.$short.$i.txt"
			done
			expect_py "$v" pyspy-text "$DUMPS/py-spy/$v-series.$short.1.txt" 3 >"$DUMPS/py-spy/$v-series.$short.expect"
			;;
		subprocess_stdin)
			pyspy "$DUMPS/py-spy-subprocesses/$v.$short.txt" --subprocesses
			expect_py "$v" pyspy-subprocesses "$DUMPS/py-spy-subprocesses/$v.$short.txt" >"$DUMPS/py-spy-subprocesses/$v.$short.expect"
			;;
		esac

		kill -USR1 "$VPID"
		await_file "$fh" || die "$v: no faulthandler output"
		expect_py "$v" faulthandler "$fh" >"${fh%.txt}.expect"
		kill -USR2 "$VPID"
		if await_file "$gu"; then
			expect_py "$v" current-frames "$cf" >"${cf%.txt}.expect"
			expect_py "$v" gunicorn "$gu" >"${gu%.txt}.expect"
		else
			log "$short: $v: the SIGUSR2 handler did not run (main thread cannot run Python signal handlers here)"
			rm -f "$cf" "$gu"
		fi
		stop
	done
done

# A JSON array that is not py-spy's: nothing in it is a stack dump.
printf '[{"a":1}]\n' >"$DUMPS/not-a-dump/not-pyspy.json"
{
	echo "verdict: error"
	echo "mentions: no stack dump found"
	echo "note: a JSON array whose objects have none of py-spy's fields (thread_id, frames): not a Python process with threads"
} >"$DUMPS/not-a-dump/not-pyspy.expect"
log "python: done"
