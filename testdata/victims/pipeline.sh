# pipeline: a shell pipeline whose writer blocks on a full pipe to a slow
# consumer.
#
# The script runs, in the foreground,
#
#     yes | ( read x; exec sleep 1000000000 )
#
# `yes` writes "y\n" forever; the consumer reads one line and then sleeps
# (the subshell execs sleep, so the consumer is one process: the `sleep`,
# holding the pipe's read end on fd 0). The 64 KiB pipe fills at once and
# `yes` blocks in write(1, ...); the shell running the script blocks in
# wait4 for the pipeline.
#
# A background watcher subshell (a child of the script's shell, started
# before the pipeline) polls /proc until the script's shell is in wait4,
# a child of it named yes is in write(1, ...) on pipe:[N] and a child named
# sleep is in nanosleep with fd 0 on the same pipe:[N], twice in a row
# 100 ms apart, then prints
#
#     ready pid=P writer=W consumer=C pipe=pipe:[N]
#
# and exits. P is the shell running the script ($$). If the hang is not
# reached within 60 s it writes the reason to stderr and kills its
# process group (kill -KILL 0): started by the test, that is the victim's
# group. Everything stays in the script's process group (a non-interactive
# shell does no job control).
#
# Run: sh pipeline.sh

P=$$

case $(uname -m) in
x86_64)
	SYS_write=1 SYS_wait4=61 SYS_nanosleep=35 SYS_clock_nanosleep=230 ;;
aarch64)
	SYS_write=64 SYS_wait4=260 SYS_nanosleep=101 SYS_clock_nanosleep=115 ;;
*)
	echo "error: no syscall numbers for $(uname -m)" >&2
	exit 1 ;;
esac

# check sets LINE and returns 0 when the hang is in place; otherwise it sets
# REASON and returns 1.
check() {
	writer= consumer= wpipe= cpipe=
	for d in /proc/[0-9]*; do
		{ read -r st <"$d/stat"; } 2>/dev/null || continue
		set -- ${st##*) }
		[ "$2" = "$P" ] || continue # children of the script's shell only
		{ read -r comm <"$d/comm"; } 2>/dev/null || continue
		{ read -r nr a0 rest <"$d/syscall"; } 2>/dev/null || continue
		case $comm in
		yes)
			if [ "$nr" = "$SYS_write" ] && [ "$a0" = 0x1 ]; then
				writer=${d#/proc/}
				wpipe=$(readlink "$d/fd/1" 2>/dev/null)
			fi ;;
		sleep)
			if [ "$nr" = "$SYS_clock_nanosleep" ] || [ "$nr" = "$SYS_nanosleep" ]; then
				consumer=${d#/proc/}
				cpipe=$(readlink "$d/fd/0" 2>/dev/null)
			fi ;;
		esac
	done
	if [ -z "$writer" ]; then
		REASON="no child yes in write(1, ...)"
		return 1
	fi
	if [ -z "$consumer" ]; then
		REASON="no child sleep in nanosleep"
		return 1
	fi
	case $wpipe in
	pipe:*) ;;
	*)
		REASON="writer $writer fd 1 is $wpipe, not a pipe"
		return 1 ;;
	esac
	if [ "$wpipe" != "$cpipe" ]; then
		REASON="writer $writer writes $wpipe, consumer $consumer reads $cpipe"
		return 1
	fi
	read -r nr rest </proc/$P/syscall
	if [ "$nr" != "$SYS_wait4" ]; then
		REASON="shell $P not in wait4 (syscall $nr)"
		return 1
	fi
	LINE="ready pid=$P writer=$writer consumer=$consumer pipe=$wpipe"
	return 0
}

(
	deadline=$(($(date +%s) + 60))
	while [ "$(date +%s)" -lt $deadline ]; do
		if check && sleep 0.1 && check; then
			echo "$LINE"
			exit 0
		fi
		sleep 0.02
	done
	echo "error: hang not reached within 60s: $REASON" >&2
	kill -KILL 0
) &

yes | ( read x; exec sleep 1000000000 )
