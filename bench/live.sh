#!/usr/bin/env bash
# live.sh [N...] [RUNS]: `hangdoc PID` on a live server-shaped Go program
# (testdata/victims/goserver: N goroutines that own their objects, parked
# in select and channel receives, and queues on mutexes), read from its
# memory: RUNS runs (default 3) for each N (default 10000 100000), under
# /usr/bin/time -v. Prints each run's wall time, CPU time (user+sys) and
# peak RSS, and their medians. hangdoc's wall time includes its sampling
# (3 samples 1 s apart by default), which is waiting, not work: its CPU
# time is what the diagnosis costs.
#
# For scale, gostackparse parses the program's own runtime.Stack dump of
# the same goroutines (taken through SIGQUIT's format by a second run of
# the victim, -dump), side by side.
set -euo pipefail
cd "$(dirname "$0")"
args=("$@")
runs=3
if [ ${#args[@]} -gt 1 ] && [[ ${args[-1]} =~ ^[0-9]+$ ]] && [ "${args[-1]}" -lt 100 ]; then
	runs=${args[-1]}
	unset 'args[-1]'
fi
[ ${#args[@]} -gt 0 ] || args=(10000 100000)
bin=$(mktemp -d)
victim=
cleanup() {
	if [ -n "$victim" ]; then kill "$victim" 2>/dev/null || true; fi
	rm -rf "$bin"
}
trap cleanup EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc && go build -o "$bin/goserver" ./testdata/victims/goserver)
go build -o "$bin/gostackparse" ./cmd/gostackparse
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for n in "${args[@]}"; do
	"$bin/goserver" -n "$n" -dump "$bin/dump.txt" >"$bin/ready" 2>"$bin/victim.err" &
	victim=$!
	for _ in $(seq 1200); do
		grep -q '^ready' "$bin/ready" && break
		kill -0 "$victim" 2>/dev/null || { cat "$bin/victim.err" >&2; exit 1; }
		sleep 0.1
	done
	grep -q '^ready' "$bin/ready" || { echo "goserver -n $n: not ready in 120 s" >&2; exit 1; }
	pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$bin/ready")
	rm -f "$bin/hangdoc.times"
	for _ in $(seq "$runs"); do
		/usr/bin/time -v -o "$bin/t" "$bin/hangdoc" "$pid" >"$bin/report.txt" 2>/dev/null || true
		awk -F': ' '
			/Elapsed \(wall clock\)/ { n = split($2, p, ":"); wall = (n == 3) ? p[1] * 3600 + p[2] * 60 + p[3] : p[1] * 60 + p[2] }
			/User time/ { user = $2 } /System time/ { sys = $2 } /Maximum resident/ { rss = $2 }
			END { printf "%.2f %.2f %d\n", wall, user + sys, rss }' "$bin/t" >>"$bin/hangdoc.times"
	done
	goroutines=$(sed -n 's/^GOROUTINES  \([0-9]*\) .*/\1/p' "$bin/report.txt")
	source=$(grep -o 'GOROUTINE STACKS  ([a-z]*' "$bin/report.txt" | sed 's/.*(//')
	kill "$victim"
	wait "$victim" 2>/dev/null || true
	victim=
	echo "goserver -n $n: hangdoc read $goroutines goroutines from $source"
	echo "  hangdoc runs (wall s, cpu s, peak RSS KiB): $(tr '\n' ',' <"$bin/hangdoc.times" | sed 's/,$//;s/,/; /g')"
	w=$(cut -d' ' -f1 "$bin/hangdoc.times" | median)
	c=$(cut -d' ' -f2 "$bin/hangdoc.times" | median)
	m=$(cut -d' ' -f3 "$bin/hangdoc.times" | median)
	echo "  median: wall ${w}s (sampling included), CPU ${c}s, peak RSS $((m / 1024)) MiB"
	if [ -s "$bin/dump.txt" ]; then
		/usr/bin/time -f '%e %U %S %M' -o "$bin/t" "$bin/gostackparse" "$bin/dump.txt" >/dev/null
		read -r gw gu gs gm <"$bin/t"
		echo "  gostackparse of its runtime.Stack dump ($(($(stat -c %s "$bin/dump.txt") >> 20)) MiB): wall ${gw}s, CPU $(awk -v u="$gu" -v s="$gs" 'BEGIN {printf "%.2f", u + s}')s, peak RSS $((gm / 1024)) MiB"
	fi
	rm -f "$bin/dump.txt"
done
