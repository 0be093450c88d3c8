# lib.sh: what every corpus generator shares. Sourced, not run.
#
# Every external command runs under timeout with stdin from /dev/null; a
# victim runs under `timeout` too, which puts it in a process group of its
# own, so stopping one kills the whole group by its id.

set -euo pipefail
ulimit -c 0 # GOTRACEBACK=crash aborts: no core files in the tree

CORPUS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VICTIMS=$CORPUS/victims
DUMPS=$CORPUS/dumps
WORK=${CORPUS_WORK:-/tmp/hangdoc-corpus}
mkdir -p "$WORK/bin" "$WORK/run"

GO_TOOLCHAINS=${GO_TOOLCHAINS:-"go1.22.0 go1.23.0 go1.24.0 go1.25.0 go1.26.0 go1.27.0"}
PYTHONS=${PYTHONS:-"3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0"}
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}

log() { printf '%s\n' "gen: $*" >&2; }
die() { log "$*"; exit 1; }

# run SECS CMD...: one external command, bounded, stdin from /dev/null.
run() { local t=$1; shift; timeout -k 5 "$t" "$@" </dev/null; }

# build_go TOOLCHAIN DIR OUT [go build flags...]: build one victim with one toolchain.
build_go() {
	local tc=$1 dir=$2 out=$3; shift 3
	(cd "$VICTIMS/${GOMODDIR:-go}" && run 600 nice -n 10 env GOTOOLCHAIN="$tc" GOFLAGS=-buildvcs=false go build "$@" -o "$out" "./$dir")
}

# start NAME CMD...: start a victim in the background (own process group via
# timeout), stdout to $WORK/run/NAME.out, stderr to ${STDERR_TO:-$WORK/run/NAME.err}.
# Sets VPID (the victim's pid from its ready line), VGROUP (timeout's pid =
# the process group) and the ready line's keys as shell variables R_<key>.
start() {
	local name=$1; shift
	local out=$WORK/run/$name.out err=${STDERR_TO:-$WORK/run/$name.err}
	: >"$out"
	timeout -k 5 300 "$@" >"$out" 2>"$err" </dev/null &
	VGROUP=$!
	await_ready "$out" "$name"
}

# await_ready FILE NAME: wait (60 s at most) for "ready pid=P k=v..." in FILE.
await_ready() {
	local file=$1 name=$2 line="" i kv
	for i in $(seq 600); do
		line=$(grep -a -m1 '^ready pid=' "$file" 2>/dev/null | tr -d '\r' || true)
		[ -n "$line" ] && break
		if [ -n "${VGROUP:-}" ] && ! kill -0 "$VGROUP" 2>/dev/null; then break; fi
		sleep 0.1
	done
	[ -n "$line" ] || { cat "${STDERR_TO:-$WORK/run/$name.err}" >&2 2>/dev/null || true; die "$name: no ready line"; }
	for kv in ${line#ready }; do
		case $kv in
		*=*) [[ ${kv%%=*} =~ ^[a-z]+$ ]] || die "$name: odd ready key in: $line"
			printf -v "R_${kv%%=*}" '%s' "${kv#*=}" ;;
		esac
	done
	VPID=$R_pid
	READY_LINE=$line
}

# stop: kill the victim's process group and reap it.
stop() {
	if [ -n "${VGROUP:-}" ]; then
		kill -KILL -- "-$VGROUP" 2>/dev/null || true
		wait "$VGROUP" 2>/dev/null || true
	fi
	VGROUP=""
	unset "${!R_@}" 2>/dev/null || true
}
trap 'stop' EXIT

# sigquit: send SIGQUIT to the victim and wait for it to exit (it dumps to its stderr).
sigquit() {
	kill -QUIT "$VPID"
	wait "$VGROUP" 2>/dev/null || true
	VGROUP=""
}

# fetch URL OUT: one HTTP GET, the body byte for byte.
fetch() { run 60 curl -sS --fail -o "$2" "$1"; }

# goroutines FILE: distinct goroutine ids other than 0 (an M's g0 is not a
# goroutine) among the header lines of a dump.
goroutines() {
	grep -aoE '^goroutine [0-9]+ ' "$1" | awk '$2 != 0 {print $2}' | sort -u | wc -l | tr -d ' '
}

# csv_goroutines "7,8,9": "goroutine 7, goroutine 8, goroutine 9".
csv_goroutines() { local IFS=,; local out="" g; for g in $1; do out+="${out:+, }goroutine $g"; done; printf '%s' "$out"; }

# holder_lines "7,8" BASIS: one holder/basis pair per id.
holder_lines() { local IFS=, g; for g in $1; do printf 'holder: goroutine %s\nbasis: %s\n' "$g" "$2"; done; }

# gover TOOLCHAIN: "go1.22.0" -> "1.22".
gover() { local v=${1#go}; printf '%s' "${v%.*}"; }

# record FILE GID: the first record of goroutine GID in a Go dump.
record() { awk -v g="$2" 'p && /^$/ {exit} $0 ~ ("^goroutine " g " ") {p=1} p' "$1"; }

# lock_addr FILE GID: the mutex address goroutine GID waits on, from its
# lockSlow/Lock frame ("" when the dump does not show it).
lock_addr() {
	record "$1" "$2" | grep -aoE '^(internal/)?sync\.\(\*Mutex\)\.(lockSlow|Lock)\(0x[0-9a-f]+\)' | head -1 | grep -oE '0x[0-9a-f]+' || true
}

# frame_arg FILE GID FUNC N: the Nth argument word of FUNC's frame in goroutine GID.
frame_arg() {
	record "$1" "$2" | grep -aF -m1 "$3(" | sed 's/.*(\(.*\))$/\1/' | tr -d ' ' | cut -d, -f"$4" || true
}

# The Go dumps every generator of them takes (expect_go.sh must be sourced).

# one_sigquit VICTIM TC BIN OUT [args]: run, wait for ready, SIGQUIT, write OUT and OUT.expect.
one_sigquit() {
	local v=$1 tc=$2 bin=$3 out=$4; shift 4
	STDERR_TO=$out start "$v" "$bin" "$@"
	sigquit
	expect_go "$v" sigquit "$out" >"${out%.txt}.expect"
	stop
}

# one_pprof VICTIM TC BIN OUT [SERIES]: run with -http, fetch debug=2 (SERIES times, a second apart).
one_pprof() {
	local v=$1 tc=$2 bin=$3 out=$4 series=${5:-} i
	start "$v" "$bin" -http 127.0.0.1:0
	if [ -n "$series" ]; then
		for i in $(seq "$series"); do
			[ "$i" -gt 1 ] && sleep 1
			fetch "http://$R_addr/debug/pprof/goroutine?debug=2" "${out%.txt}.$i.txt"
		done
		expect_go "$v" pprof-debug2 "${out%.txt}.1.txt" "$series" >"${out%.txt}.expect"
	else
		fetch "http://$R_addr/debug/pprof/goroutine?debug=2" "$out"
		expect_go "$v" pprof-debug2 "$out" >"${out%.txt}.expect"
	fi
	stop
}
