#!/usr/bin/env bash
# jvmlive.sh [N] [RUNS]: `hangdoc PID` on a live JVM of N Java threads
# shaped as a server's (bench/jvmlive/ManyThreads.java, default 1000: each
# waits on a connection object of its own, at one of 16 call depths, so
# there are no twins), for each JDK here (17, 25): RUNS runs (default 5)
# of 3 samples 0.5 s apart, each attaching and taking a thread dump on
# each sample where a thread may have moved. Prints each run's wall time,
# hangdoc's CPU time (user+sys) and peak RSS, the text dumps it took, and
# the longest thread dump the report notes (an upper bound of the JVM's
# safepoint pause); then the medians. Beside it, for scale, jcmd PID
# Thread.print -l once per run (a JVM of its own that attaches the same
# way).
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-1000}
runs=${2:-5}
bin=$(mktemp -d)
victim=
cleanup() {
	if [ -n "$victim" ]; then kill "$victim" 2>/dev/null || true; fi
	rm -rf "$bin"
}
trap cleanup EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for jdk in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64; do
	[ -x "$jdk/bin/javac" ] || continue
	"$jdk/bin/javac" -d "$bin" jvmlive/ManyThreads.java
	"$jdk/bin/java" -Xss256k -cp "$bin" ManyThreads "$n" >"$bin/ready" 2>&1 &
	victim=$!
	for _ in $(seq 600); do grep -q '^ready' "$bin/ready" && break; sleep 0.1; done
	: >"$bin/wall"; : >"$bin/cpu"; : >"$bin/rss"; : >"$bin/pause"; : >"$bin/jcmd"
	for i in $(seq "$runs"); do
		/usr/bin/time -f '%e %U %S %M' -o "$bin/t" "$bin/hangdoc" "$victim" --json --samples 3 --interval 500ms >"$bin/r.json" 2>/dev/null || true
		read -r wall user sys rss <<<"$(tail -1 "$bin/t")"
		pause=$(grep -o 'the longest took [0-9]* ms' "$bin/r.json" | grep -o '[0-9]*' || echo '?')
		dumps=$(grep -o '[0-9]* of [0-9]* samples took no thread dump' "$bin/r.json" | awk '{print $3 - $1}' || true)
		cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
		echo "$wall" >>"$bin/wall"; echo "$cpu" >>"$bin/cpu"; echo "$rss" >>"$bin/rss"; echo "$pause" >>"$bin/pause"
		/usr/bin/time -f '%e' -o "$bin/j" "$jdk/bin/jcmd" "$victim" Thread.print -l >/dev/null 2>&1 || true
		tail -1 "$bin/j" >>"$bin/jcmd"
		printf '  %s run %d: wall %ss, CPU %ss, peak RSS %s KiB, text dumps %s, longest dump %s ms; jcmd Thread.print -l %ss\n' "$(basename "$jdk")" "$i" "$wall" "$cpu" "$rss" "${dumps:-3}" "$pause" "$(tail -1 "$bin/j")"
	done
	printf '%s, %d threads: median wall %ss, CPU %ss, peak RSS %s KiB, longest dump %s ms; jcmd %ss\n' "$(basename "$jdk")" "$n" \
		"$(median <"$bin/wall")" "$(median <"$bin/cpu")" "$(median <"$bin/rss")" "$(median <"$bin/pause")" "$(median <"$bin/jcmd")"
	kill "$victim" 2>/dev/null || true
	wait "$victim" 2>/dev/null || true
	victim=
done
