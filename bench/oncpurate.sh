#!/usr/bin/env bash
# oncpurate.sh [RUNS]: what one on-CPU sample costs the target, shown by
# raising the rate (issue 22's goal: at most 1% throughput at 99 Hz, a loss
# too small to see beside the ±2% that separates two runs on this machine).
#
# bench/oncpu/throughput.c works ONE thread of pure CPU for 4 s and counts
# its units of work, RUNS times (default 5) in each mode, interleaved:
# alone, and while `hangdoc PID --samples 4 --interval 1s` samples it at
# 99, 990 and 9,900 Hz (the hidden --on-cpu-hz). One target thread on a
# 2-core machine leaves a core to hangdoc, whose own draining grows with
# the rate: what the target loses is the kernel's work in its context
# (the sample, its callchain, its stack copy). Prints each run's units and
# each mode's median, and its loss against alone.
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-5}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
gcc -O2 -fno-omit-frame-pointer -pthread -o "$bin/throughput" oncpu/throughput.c
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# units HZ: one run of the victim, sampled at HZ (0: alone).
units() {
	"$bin/throughput" 1 4 >"$bin/out" &
	local v=$!
	for _ in $(seq 100); do grep -q '^ready' "$bin/out" 2>/dev/null && break; sleep 0.05; done
	if [ "$1" != 0 ]; then
		"$bin/hangdoc" "$v" --samples 4 --interval 1s --on-cpu-hz "$1" >/dev/null 2>&1 || true
	fi
	wait "$v"
	sed -n 's/^units=//p' "$bin/out"
}
modes="0 99 990 9900"
for m in $modes; do : >"$bin/$m"; done
for i in $(seq "$runs"); do
	for m in $modes; do
		u=$(units "$m")
		echo "$u" >>"$bin/$m"
		printf '  run %d %5s Hz %s\n' "$i" "$m" "$u"
	done
done
alone=$(median <"$bin/0")
for m in $modes; do
	med=$(median <"$bin/$m")
	awk -v m="$m" -v u="$med" -v a="$alone" 'BEGIN {printf "  median %5s Hz %d units, %+.2f%% against alone\n", m, u, (u - a) * 100 / a}'
done
