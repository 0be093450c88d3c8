#!/usr/bin/env bash
# analyze.sh [INPUT...] [RUNS]: `hangdoc analyze INPUT` and
# DataDog/gostackparse only parsing INPUT, as whole processes, side by
# side: RUNS runs of each (default 7), taking turns, under /usr/bin/time.
# Prints each run's wall time, CPU time (user+sys) and peak RSS, then the
# medians and their ratios.
#
# An INPUT is a dump file, or SHAPE:N for a generated dump of N goroutines
# (bench/cmd/gendump): server:N is bench.ServerDump, goroutines that own
# their objects; sites:N is bench.Dump, goroutines from 48 call sites.
# "all" is server:10000 server:100000 sites:10000 sites:100000. Without an
# INPUT: the 100,000-goroutine dump that testdata/corpus/gen/big.sh 100000
# makes.
set -euo pipefail
cd "$(dirname "$0")"
args=("$@")
runs=7
if [ ${#args[@]} -gt 0 ] && [[ ${args[-1]} =~ ^[0-9]+$ ]]; then
	runs=${args[-1]}
	unset 'args[-1]'
fi
[ ${#args[@]} -gt 0 ] || args=(/tmp/hangdoc-corpus/selfdump-100k.go1.26.0.txt)
if [ "${args[0]}" = all ]; then
	args=(server:10000 server:100000 sites:10000 sites:100000)
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
go build -o "$bin/gostackparse" ./cmd/gostackparse
go build -o "$bin/gendump" ./cmd/gendump
measure() { # measure OUT CMD...: append "wall cpu kilobytes" to OUT
	local out=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$bin/t" "$@" >/dev/null 2>&1 || true
	# not its "exited with status" line
	grep -E '^[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+$' "$bin/t" | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' >>"$out"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for in in "${args[@]}"; do
	dump=$in
	if [[ $in =~ ^(server|sites):([0-9]+)$ ]]; then
		dump=$bin/${BASH_REMATCH[1]}-${BASH_REMATCH[2]}.txt
		"$bin/gendump" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >"$dump"
	fi
	[ -f "$dump" ] || { echo "no dump at $dump: make it with bash testdata/corpus/gen/big.sh 100000" >&2; exit 2; }
	rm -f "$bin"/*.times
	# One run of each first, untimed: the dump into the page cache, the
	# binaries into memory.
	"$bin/hangdoc" analyze "$dump" >/dev/null || true
	"$bin/gostackparse" "$dump" >/dev/null
	for _ in $(seq "$runs"); do
		measure "$bin/hangdoc.times" "$bin/hangdoc" analyze "$dump"
		measure "$bin/gostackparse.times" "$bin/gostackparse" "$dump"
	done
	size=$(stat -c %s "$dump")
	printf '%s (%d bytes, %d MiB)\n' "$in" "$size" $((size >> 20))
	for name in hangdoc gostackparse; do
		echo "  $name runs (wall s, cpu s, peak RSS KiB): $(tr '\n' ',' <"$bin/$name.times" | sed 's/,$//;s/,/; /g')"
	done
	h=$(cut -d' ' -f1 "$bin/hangdoc.times" | median)
	g=$(cut -d' ' -f1 "$bin/gostackparse.times" | median)
	hc=$(cut -d' ' -f2 "$bin/hangdoc.times" | median)
	gc=$(cut -d' ' -f2 "$bin/gostackparse.times" | median)
	hm=$(cut -d' ' -f3 "$bin/hangdoc.times" | median)
	gm=$(cut -d' ' -f3 "$bin/gostackparse.times" | median)
	echo "  median wall: hangdoc analyze ${h}s, gostackparse ${g}s: ratio $(awk -v h="$h" -v g="$g" 'BEGIN {printf "%.2f", h/g}')"
	echo "  median CPU: hangdoc analyze ${hc}s, gostackparse ${gc}s: ratio $(awk -v h="$hc" -v g="$gc" 'BEGIN {printf "%.2f", h/g}')"
	echo "  median peak RSS: hangdoc analyze $((hm / 1024)) MiB, gostackparse $((gm / 1024)) MiB; the dump is $((size >> 20)) MiB"
	if [[ $dump == "$bin"/* ]]; then rm -f "$dump"; fi
done
