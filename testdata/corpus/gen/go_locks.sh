#!/usr/bin/env bash
# go_locks.sh: the lock-identity victims (issue 19) with every toolchain:
# SIGQUIT and pprof debug=2 dumps into dumps/go-sigquit and dumps/go-pprof.
#   rwclosures   one RWMutex captured by three closures
#   copylock     a value receiver locks its copy of a locked mutex
#   rlockwriter  a recursive read lock with a writer queued between
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/expect_go.sh"
mkdir -p "$DUMPS"/go-{sigquit,pprof}

for tc in $GO_TOOLCHAINS; do
	bin=$WORK/bin/$tc
	mkdir -p "$bin"
	for v in rwclosures copylock rlockwriter; do
		log "$tc: $v"
		build_go "$tc" "$v" "$bin/$v"
		one_sigquit "$v" "$tc" "$bin/$v" "$DUMPS/go-sigquit/$v.$tc.txt"
		one_pprof "$v" "$tc" "$bin/$v" "$DUMPS/go-pprof/$v.$tc.txt"
	done
done
