#!/usr/bin/env bash
# oncpu.sh [RUNS]: what the kernel's on-CPU sampling costs (issue 22).
#
# 1. The target's throughput: bench/oncpu/throughput.c works 2 threads of
#    pure CPU for 4 s and counts its units of work, RUNS times (default 5)
#    in each of three ways, interleaved: alone; while `hangdoc PID` takes
#    4 samples 1 s apart (sampling on, the default); and the same with
#    --no-on-cpu. Prints each run's units and the medians.
# 2. hangdoc's own CPU time (user+sys, /usr/bin/time) for a 1,000-thread
#    native target (testdata/victims/manythreads: 1,000 threads parked in
#    a futex wait, whose native stacks are unwound) and for a target whose
#    64 threads all run (the most that are sampled), with and without
#    --no-on-cpu.
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-5}
bin=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$bin"
}
trap cleanup EXIT
(cd .. && go build -o "$bin/hangdoc" ./cmd/hangdoc)
gcc -O2 -fno-omit-frame-pointer -pthread -o "$bin/throughput" oncpu/throughput.c
gcc -O0 -g -pthread -I../testdata/victims -o "$bin/manythreads" ../testdata/victims/manythreads.c
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# units MODE: one run of the throughput victim, with hangdoc as MODE says.
units() {
	"$bin/throughput" 2 4 >"$bin/out" &
	local v=$!
	for _ in $(seq 100); do grep -q '^ready' "$bin/out" 2>/dev/null && break; sleep 0.05; done
	case $1 in
	on) "$bin/hangdoc" "$v" --samples 4 --interval 1s >/dev/null 2>&1 || true ;;
	off) "$bin/hangdoc" "$v" --samples 4 --interval 1s --no-on-cpu >/dev/null 2>&1 || true ;;
	esac
	wait "$v"
	sed -n 's/^units=//p' "$bin/out"
}
echo "throughput (units of work in 4 s, 2 threads, higher is better)"
for mode in alone on off; do : >"$bin/$mode"; done
for i in $(seq "$runs"); do
	for mode in alone on off; do
		u=$(units $mode)
		echo "$u" >>"$bin/$mode"
		printf '  run %d %-5s %s\n' "$i" "$mode" "$u"
	done
done
for mode in alone on off; do
	printf '  median %-5s %s\n' "$mode" "$(median <"$bin/$mode")"
done

# cpu TARGET-PID FLAGS...: hangdoc's user+sys seconds for one run.
cpu() {
	local pid=$1
	shift
	/usr/bin/time -f '%U %S' -o "$bin/time" "$bin/hangdoc" "$pid" --samples 3 --interval 1s "$@" >/dev/null 2>&1 || true
	tail -1 "$bin/time" | awk '{printf "%.3f\n", $1 + $2}' # the last line: a failed run's status line comes first
}
echo "hangdoc CPU time (user+sys s, 3 samples 1 s apart)"
"$bin/manythreads" 1000 >"$bin/many" &
pids+=($!)
for _ in $(seq 600); do grep -q '^ready' "$bin/many" 2>/dev/null && break; sleep 0.1; done
many=${pids[-1]}
"$bin/throughput" 64 3600 >"$bin/busy" &
pids+=($!)
sleep 0.5
busy=${pids[-1]}
for target in "manythreads-1000:$many" "throughput-64-running:$busy"; do
	name=${target%%:*}
	pid=${target##*:}
	for flags in "" "--no-on-cpu"; do
		: >"$bin/c"
		for _ in $(seq "$runs"); do cpu "$pid" $flags >>"$bin/c"; done
		printf '  %-24s %-12s median %s s  (runs: %s)\n' "$name" "${flags:-sampling}" "$(median <"$bin/c")" "$(tr '\n' ' ' <"$bin/c")"
	done
done
