#!/usr/bin/env bash
# py_lockid.sh: py-spy dumps of the live tests' lock-identity victims
# (../../victims/py_lock_identity.py and py_signal_reenter.py, issue 19)
# under every Python of $PYTHONS, into dumps/py-spy with their expectations:
#   lockid-abba        the textbook ABBA on module globals (`with b: pass`)
#   lockid-abba-join   the same, main joining t1
#   lockid-module      lock.acquire() at the module's top level, 3 waiters
#   sighup-lock        a SIGHUP handler re-enters `with state_lock:`
#   sighup-rlock       the same with an RLock: no deadlock
# analyze finds their sources with --src testdata/victims (corpus_test.go).
. "$(dirname "$0")/lib.sh"

LIVE=$CORPUS/../victims
mkdir -p "$DUMPS/py-spy"

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
	for c in "lockid-abba py_lock_identity.py abba 3" "lockid-abba-join py_lock_identity.py abba-join 3" \
		"lockid-module py_lock_identity.py module 4" "sighup-lock py_signal_reenter.py lock 1" "sighup-rlock py_signal_reenter.py rlock 1"; do
		set -- $c
		name=$1 script=$2 mode=$3 threads=$4
		log "$short: $name"
		start "$name" env -C "$LIVE" "$py" "$script" "$mode"
		await_threads "$threads"
		out=$DUMPS/py-spy/$name.$short.txt
		run 60 py-spy dump --pid "$VPID" >"$out" || die "py-spy failed"
		{
			case $name in
			lockid-abba | lockid-abba-join)
				echo "verdict: deadlock"
				echo "confidence: medium"
				echo "holder: thread t1"
				echo "basis: probable"
				echo "holder: thread t2"
				echo "basis: probable"
				echo "cycle: thread t1, thread t2"
				echo "threads: 3"
				echo "mentions: deadlock between 2 threads"
				echo "producer: py-spy-text"
				echo "note: t1 holds a (\`with a:\`) and waits at \`with b: pass\`; t2 holds b and waits at \`with a: pass\`; probable: the same module globals by name"
				[ $mode = abba-join ] && echo "note: MainThread joins t1: it waits behind the cycle, it is not in it"
				;;
			lockid-module)
				echo "verdict: blocked"
				echo "confidence: medium"
				echo "holder: thread MainThread"
				echo "basis: probable"
				echo "threads: 4"
				echo "mentions: MainThread"
				echo "producer: py-spy-text"
				echo "note: MainThread took lock with lock.acquire() at the module's top level and sleeps in a loop there (its only frame is <module>); waiter-0..2 wait at \`with lock:\`"
				;;
			sighup-lock)
				echo "verdict: deadlock"
				echo "confidence: medium"
				echo "holder: thread MainThread"
				echo "basis: probable"
				echo "cycle: thread MainThread"
				echo "threads: 1"
				echo "mentions: self-deadlock"
				echo "mentions: run_sighup"
				echo "mentions: run_sighup is the SIGHUP handler"
				echo "producer: py-spy-text"
				echo "note: start() holds state_lock (a threading.Lock) and reads a pipe; SIGHUP runs run_sighup on top of the read, which calls start() again: it waits at \`with state_lock:\` for the lock its outer frame holds"
				;;
			sighup-rlock)
				echo "verdict: blocked"
				echo "threads: 1"
				echo "producer: py-spy-text"
				echo "note: the same with an RLock: the handler's start_r() takes it again and reads the pipe like its outer frame; no deadlock"
				;;
			esac
		} >"$DUMPS/py-spy/$name.$short.expect"
		stop
	done
done
