# cronlock: two runs of one cron job, each under flock(1) on the job's lock
# file: the first holds the lock and is stuck (here: it sleeps), the second
# queues behind it, blocked in flock().
#
#     flock LOCK sleep 1000000000 &   # the first run
#     flock LOCK true &               # the second run: waits
#
# flock(1) takes the lock and runs its command as a child, holding the lock
# until the command exits, so /proc/locks names the first flock process.
# A background watcher subshell polls /proc until the second flock is in
# flock() on the lock file, twice in a row 100 ms apart, then prints
#
#     ready pid=P holder=H waiter=W path=LOCK
#
# and exits. P is the shell running the script ($$). If the hang is not
# reached within 60 s it writes the reason to stderr and kills its process
# group. The lock file lives in $TMPDIR (or /tmp) and is removed by the
# test's temporary directory.
#
# Run: sh cronlock.sh

P=$$
LOCK=${TMPDIR:-/tmp}/hangdoc-cronlock-$P.lock
: >"$LOCK"

case $(uname -m) in
x86_64) SYS_flock=73 ;;
aarch64) SYS_flock=32 ;;
*)
	echo "error: no syscall numbers for $(uname -m)" >&2
	exit 1 ;;
esac

flock "$LOCK" sleep 1000000000 &
HOLDER=$!

# The first run holds the lock before the second starts.
i=0
until grep -q " $HOLDER " /proc/locks 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 6000 ]; then
		echo "error: the first run never took the lock" >&2
		kill -KILL 0
	fi
	sleep 0.01
done

flock "$LOCK" true &
WAITER=$!

check() {
	{ read -r nr rest <"/proc/$WAITER/syscall"; } 2>/dev/null || { REASON="waiter gone"; return 1; }
	[ "$nr" = "$SYS_flock" ] || { REASON="waiter in syscall $nr"; return 1; }
	LINE="ready pid=$P holder=$HOLDER waiter=$WAITER path=$LOCK"
}

(
	i=0
	while [ $i -lt 6000 ]; do
		if check && sleep 0.1 && check; then
			echo "$LINE"
			exit 0
		fi
		i=$((i + 1))
		sleep 0.01
	done
	echo "error: hang not reached within 60s: $REASON" >&2
	kill -KILL 0
) &

wait
