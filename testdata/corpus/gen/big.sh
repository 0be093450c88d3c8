#!/usr/bin/env bash
# big.sh: the large runtime.Stack dumps of victims/go/selfdump.
#   big.sh          dumps/go-big/selfdump-10k.<tc>.txt.gz (committed; gzip -9 -n)
#   big.sh 100000   $WORK/selfdump-100k.<tc>.txt and its .expect (about 30 MiB:
#                   never committed; for the issue-12 benchmark)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/expect_go.sh"

tc=${BIG_TOOLCHAIN:-go1.26.0}
n=${1:-10000}
bin=$WORK/bin/$tc
mkdir -p "$bin" "$DUMPS/go-big"
build_go "$tc" selfdump "$bin/selfdump"

if [ "$n" = 10000 ]; then
	raw=$WORK/run/selfdump-10k.$tc.txt
	gz=$DUMPS/go-big/selfdump-10k.$tc.txt.gz
	exp=$DUMPS/go-big/selfdump-10k.$tc.expect
else
	raw=$WORK/selfdump-$((n / 1000))k.$tc.txt
	exp=${raw%.txt}.expect
fi
start selfdump "$bin/selfdump" -n "$(( n - 1 ))" -out "$raw"
wait "$VGROUP" || true; VGROUP=""
{
	echo "verdict: blocked"
	echo "confidence: medium"
	holder_lines "$R_holder" probable
	echo "goroutines: $R_goroutines"
	echo "program-goroutines: $R_goroutines"
	echo "mentions: main.holdAndWait"
	echo "producer: runtime-stack"
	echo "note: $R_goroutines goroutines: goroutine 1 writes the dump (runtime.Stack); $R_holder holds mu and waits on a channel; $R_mutex wait for mu; $R_chan in chan receive; $R_wg in WaitGroup.Wait; $R_sleep sleeping; $R_select in select; 1 accept loop"
} >"$exp"
if [ -n "${gz:-}" ]; then
	gzip -9 -n -c "$raw" >"$gz"
	log "big: $gz ($(stat -c %s "$gz") bytes, $(stat -c %s "$raw") uncompressed)"
else
	log "big: $raw ($(stat -c %s "$raw") bytes)"
fi
stop
