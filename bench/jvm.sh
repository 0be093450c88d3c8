#!/usr/bin/env bash
# jvm.sh [N] [RUNS]: `hangdoc analyze` of a generated jstack -l dump of a
# JVM server with N Java threads (bench.JstackDump, default 10000) beside
# `wc -l` of the same file, the floor of any reading of it: RUNS runs of
# each (default 7), taking turns, under /usr/bin/time. Prints each run's
# wall time and peak RSS, then the medians.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-10000}
runs=${2:-7}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
go build -o "$bin/gendump" ./cmd/gendump
dump=$bin/jstack-$n.txt
"$bin/gendump" jstack "$n" >"$dump"
measure() { # measure OUT CMD...: append "wall kilobytes" to OUT
	local out=$1
	shift
	/usr/bin/time -f '%e %M' -o "$bin/t" "$@" >/dev/null 2>&1 || true
	grep -E '^[0-9.]+ [0-9]+$' "$bin/t" >>"$out"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# One untimed run of each: the dump into the page cache.
"$bin/hangdoc" analyze "$dump" >/dev/null || true
wc -l "$dump" >/dev/null
for _ in $(seq "$runs"); do
	measure "$bin/hangdoc.times" "$bin/hangdoc" analyze "$dump"
	measure "$bin/wc.times" wc -l "$dump"
done
size=$(stat -c %s "$dump")
printf 'jstack:%d (%d bytes, %d lines)\n' "$n" "$size" "$(wc -l <"$dump")"
for name in hangdoc wc; do
	echo "  $name runs (wall s, peak RSS KiB): $(tr '\n' ',' <"$bin/$name.times" | sed 's/,$//;s/,/; /g')"
	printf '  %s median: %s s, %s KiB\n' "$name" "$(cut -d' ' -f1 "$bin/$name.times" | median)" "$(cut -d' ' -f2 "$bin/$name.times" | median)"
done
