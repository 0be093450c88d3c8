#!/usr/bin/env bash
# go_extra.sh: Go producers newer than go1.22 that not every toolchain has.
#   dumps/go-leak   the goroutine leak profile (/debug/pprof/goroutineleak?debug=2:
#                   go1.26.0 with GOEXPERIMENT=goroutineleakprofile, go1.27.0 by
#                   default), then a SIGQUIT of the same process: "(leaked)" states
#   dumps/go-test   synctestdeadlock: a testing/synctest bubble deadlock (go1.25.0+,
#                   GODEBUG=asynctimerchan=0: synctest refuses the go 1.22 default)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/expect_go.sh"
mkdir -p "$DUMPS/go-leak" "$DUMPS/go-test"

for tc in $GO_TOOLCHAINS; do
	case $tc in go1.2[0-5].*) continue ;; esac
	exp=""
	[ "$tc" = go1.26.0 ] && exp=goroutineleakprofile
	bin=$WORK/bin/$tc-leak
	mkdir -p "$bin"
	for v in chansend abba; do
		log "$tc: $v leak profile"
		GOEXPERIMENT=$exp build_go "$tc" "$v" "$bin/$v"
		leak=$DUMPS/go-leak/$v.$tc.pprof-leak.txt
		out=$DUMPS/go-leak/$v.$tc.sigquit.txt
		STDERR_TO=$out start "$v" "$bin/$v" -http 127.0.0.1:0
		fetch "http://$R_addr/debug/pprof/goroutineleak?debug=2" "$leak"
		sigquit
		for f in "$leak" "$out"; do
			case $f in *pprof-leak*) p=pprof-debug2 ;; *) p=sigquit ;; esac
			{
				if grep -aq '(leaked)' "$f"; then
					expect_go "$v" "$p" "$f" | sed -e 's/^verdict: blocked$/verdict: deadlock/' -e 's/^confidence: medium$/confidence: high/'
					echo "note: the runtime's goroutine leak detector marked the stuck goroutines (leaked): blocked on primitives no live goroutine can reach, i.e. the runtime itself proves they never proceed (a partial deadlock)"
				else
					expect_go "$v" "$p" "$f"
					echo "note: the leak detector marked nothing here"
				fi
				[ -n "$exp" ] && echo "note: built with GOEXPERIMENT=$exp"
				[ $p = pprof-debug2 ] && echo "note: /debug/pprof/goroutineleak?debug=2 (a leak GC, then the same text as goroutine?debug=2)"
				[ $p = sigquit ] && echo "note: SIGQUIT of the same process right after its leak profile was taken"
			} >"${f%.txt}.expect"
		done
		stop
	done
done

for tc in $GO_TOOLCHAINS; do
	case $tc in go1.2[0-4].*) continue ;; esac
	log "$tc: synctest bubble deadlock"
	out=$DUMPS/go-test/synctestdeadlock.$tc.txt
	(cd "$VICTIMS/go" && run 300 nice -n 10 env GOTOOLCHAIN="$tc" GOFLAGS=-buildvcs=false GODEBUG=asynctimerchan=0 go test -count=1 ./synctestdeadlock >"$out" 2>&1) || true
	{
		echo "verdict: deadlock"
		echo "confidence: high"
		echo "goroutines: $(goroutines "$out")"
		echo "mentions: deadlock: all goroutines in bubble are blocked"
		echo "mentions: corpusvictims/synctestdeadlock.serve"
		echo "producer: panic"
		echo "note: testing/synctest says every goroutine in the bubble is durably blocked: the test waits for a reply from serve, serve waits for a request the test never sends; headers carry \", synctest bubble N\" and (durable) wait reasons"
		echo "note: the file is go test's combined stdout and stderr; run with GODEBUG=asynctimerchan=0 (the module declares go 1.22, whose default asynctimerchan=1 synctest refuses)"
	} >"${out%.txt}.expect"
done
log "go_extra: done"
