#!/usr/bin/env bash
# analyze.sh [DUMP] [RUNS]: `hangdoc analyze DUMP` and DataDog/gostackparse
# only parsing DUMP, as whole processes, side by side: RUNS runs of each,
# taking turns, under /usr/bin/time. Prints each run's wall time and peak
# RSS, then the medians and their ratio. DUMP defaults to the
# 100,000-goroutine dump that testdata/corpus/gen/big.sh 100000 makes.
set -euo pipefail
cd "$(dirname "$0")"
dump=${1:-/tmp/hangdoc-corpus/selfdump-100k.go1.26.0.txt}
runs=${2:-7}
[ -f "$dump" ] || { echo "no dump at $dump: make it with bash testdata/corpus/gen/big.sh 100000" >&2; exit 2; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
go build -o "$bin/gostackparse" ./cmd/gostackparse
# One run of each first, untimed: the dump into the page cache, the
# binaries into memory.
"$bin/hangdoc" analyze "$dump" >/dev/null || true
"$bin/gostackparse" "$dump" >/dev/null
measure() { # measure NAME CMD...: append "seconds kilobytes" to $bin/NAME.times
	local name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$bin/t" "$@" >/dev/null 2>&1 || true
	grep -E '^[0-9.]+ [0-9]+$' "$bin/t" >>"$bin/$name.times" # not its "exited with status" line
}
for _ in $(seq "$runs"); do
	measure hangdoc "$bin/hangdoc" analyze "$dump"
	measure gostackparse "$bin/gostackparse" "$dump"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'dump: %s (%d bytes)\n' "$dump" "$(stat -c %s "$dump")"
for name in hangdoc gostackparse; do
	echo "$name runs (s, peak RSS KiB): $(tr '\n' ',' <"$bin/$name.times" | sed 's/,$//;s/,/, /g')"
done
h=$(cut -d' ' -f1 "$bin/hangdoc.times" | median)
g=$(cut -d' ' -f1 "$bin/gostackparse.times" | median)
hm=$(cut -d' ' -f2 "$bin/hangdoc.times" | median)
gm=$(cut -d' ' -f2 "$bin/gostackparse.times" | median)
echo "median wall: hangdoc analyze ${h}s, gostackparse ${g}s: ratio $(awk -v h="$h" -v g="$g" 'BEGIN {printf "%.2f", h/g}')"
echo "median peak RSS: hangdoc analyze ${hm} KiB, gostackparse ${gm} KiB; the dump is $(($(stat -c %s "$dump") / 1024)) KiB"
