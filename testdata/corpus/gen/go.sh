#!/usr/bin/env bash
# go.sh: the Go dumps. Builds every victim with every toolchain of
# $GO_TOOLCHAINS, runs it until its ready line, takes the dump(s), kills it.
#   dumps/go-sigquit   SIGQUIT to the victim, its stderr (default GOTRACEBACK)
#   dumps/go-pprof     GET /debug/pprof/goroutine?debug=2 (series: .1 .2 .3)
#   dumps/go-crash     SIGQUIT with GOTRACEBACK=crash
#   dumps/go-fatal     the runtime's own "all goroutines are asleep" report
#   dumps/go-selfdump  runtime.Stack(buf, true) written by the program itself
#   dumps/go-labels    pprof labels: default, GODEBUG=tracebacklabels=1, a go 1.27 module
#   dumps/go-test      go test -timeout panics; runtime.Stack in t.Log (go test -v)
#   dumps/go-wrapped   a terminal's ^\ echo; log-prefixed lines
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/expect_go.sh"

LONG="lockelsewhere callerholds rwmutex abba abba-nol chansend poolnofeeder wgnodone sleeploop spinner"
mkdir -p "$DUMPS"/go-{sigquit,pprof,crash,fatal,selfdump,labels,test,wrapped}

# write_selfdump_expect FILE N [truncated]
write_selfdump_expect() {
	local f=$1 n=$2 cut=${3:-}
	echo "verdict: blocked"
	echo "confidence: medium"
	if [ -n "$(record "$f" "$R_holder")" ]; then holder_lines "$R_holder" probable; fi
	echo "goroutines: $(goroutines "$f")"
	[ -z "$cut" ] && echo "program-goroutines: $((n + 1))"
	echo "mentions: main.holdAndWait"
	echo "producer: runtime-stack"
	echo "note: goroutine 1 is the program writing its own dump with runtime.Stack(buf, true); every other goroutine is one it started: $R_holder holds mu and waits on a channel, $R_mutex wait for mu, $R_chan in chan receive, $R_wg in WaitGroup.Wait, $R_sleep sleeping, $R_select in select, 1 accept loop"
	if [ -n "$cut" ]; then
		echo "note: truncated: the runtime.Stack buffer was 2048 bytes, so the dump stops mid-goroutine; only the goroutines in the file count"
		echo "mentions: truncated"
	fi
}

# go_tests TC: go test -timeout and go test -v with a t.Log'd dump.
go_tests() {
	local tc=$1 out ready=$WORK/run/test.ready
	out=$DUMPS/go-test/testtimeout.$tc.txt
	rm -f "$ready"
	(cd "$VICTIMS/go" && CORPUS_READY=$ready run 300 nice -n 10 env GOTOOLCHAIN="$tc" GOFLAGS=-buildvcs=false go test -count=1 -timeout 3s ./testtimeout >"$out" 2>&1) || true
	await_ready "$ready" testtimeout
	{
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$out")"
		echo "mentions: TestHang"
		echo "mentions: testtimeout.(*store).sync"
		echo "producer: go-test-timeout"
		echo "note: go test -timeout 3s panicked: the test goroutine $R_waiter waits for s.mu in Put while goroutine $R_holder holds it in sync() and waits on a channel; testing's own goroutines (the alarm, tRunner of main) are the framework's"
		echo "note: the file is go test's combined stdout and stderr, with its FAIL lines after the dump"
	} >"${out%.txt}.expect"
	unset "${!R_@}"

	out=$DUMPS/go-test/tlogdump.$tc.txt
	rm -f "$ready"
	(cd "$VICTIMS/go" && CORPUS_READY=$ready run 300 nice -n 10 env GOTOOLCHAIN="$tc" GOFLAGS=-buildvcs=false go test -v -count=1 ./tlogdump >"$out" 2>&1) || true
	await_ready "$ready" tlogdump
	{
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(grep -acE '^ +goroutine [0-9]+ \[' "$out")"
		echo "mentions: tlogdump.(*pool).drain"
		echo "producer: runtime-stack"
		echo "note: a runtime.Stack(buf, true) dump logged with t.Logf and printed by go test -v: every dump line is indented; goroutine $R_logger (the test, [running]) is the dumper, $R_holder holds p.mu in drain() and waits on a channel, $R_waiters wait for p.mu in take()"
	} >"${out%.txt}.expect"
	unset "${!R_@}"
}

# go127_labels: the labels victim in a module that declares go 1.27, where
# Go 1.27 prints pprof labels in goroutine headers by default.
go127_labels() {
	local tc=go1.27.0 bin=$WORK/bin/go127 out dbg sfx
	mkdir -p "$bin"
	GOMODDIR=go127 build_go $tc labels "$bin/labels"
	for dbg in "" tracebacklabels=0; do
		sfx=${dbg:+.${dbg/=/}}
		out=$DUMPS/go-labels/labels-go127mod.$tc.sigquit$sfx.txt
		STDERR_TO=$out start labels env ${dbg:+GODEBUG=$dbg} "$bin/labels"
		sigquit
		expect_go labels sigquit "$out" >"${out%.txt}.expect"
		echo "note: built in victims/go127 (go.mod declares go 1.27)${dbg:+, run with GODEBUG=$dbg}" >>"${out%.txt}.expect"
		stop
		out=$DUMPS/go-labels/labels-go127mod.$tc.pprof$sfx.txt
		start labels env ${dbg:+GODEBUG=$dbg} "$bin/labels" -http 127.0.0.1:0
		fetch "http://$R_addr/debug/pprof/goroutine?debug=2" "$out"
		expect_go labels pprof-debug2 "$out" >"${out%.txt}.expect"
		echo "note: built in victims/go127 (go.mod declares go 1.27)${dbg:+, run with GODEBUG=$dbg}" >>"${out%.txt}.expect"
		stop
	done
}

# wrapped: dumps as people save them. A terminal session (script(1)) in
# which ^\ is typed: the tty echoes "^\" before the runtime's "SIGQUIT: quit",
# and the typescript has the tty's CR LF line ends. And a dump whose every
# line went through a supervisor's log package.
wrapped() {
	local tc=${WRAP_TOOLCHAIN:-go1.26.0} bin=$WORK/bin/${WRAP_TOOLCHAIN:-go1.26.0} out fifo=$WORK/run/tty.fifo
	mkdir -p "$bin"
	build_go "$tc" logwrap "$bin/logwrap"
	build_go "$tc" lockelsewhere "$bin/lockelsewhere"

	out=$DUMPS/go-wrapped/lockelsewhere-tty.$tc.txt
	rm -f "$fifo" "$out"; mkfifo "$fifo"
	# script reads what to type from the fifo (held open on fd 7), not /dev/null: typing ^\ is the point.
	exec 7<>"$fifo"
	timeout -k 5 120 script -q -e -f -c "$bin/lockelsewhere" "$out" <&7 >/dev/null 2>&1 &
	VGROUP=$!
	await_ready "$out" lockelsewhere-tty
	printf '\034' >&7
	wait "$VGROUP" 2>/dev/null || true; VGROUP=""
	exec 7>&-
	rm -f "$fifo"
	tr -d '\r' <"$out" >"$WORK/run/plain.txt"
	expect_go lockelsewhere sigquit "$WORK/run/plain.txt" >"${out%.txt}.expect"
	echo "note: a script(1) typescript of a terminal where ^\\ was typed: the ready line, the tty's ^\\ echo glued to SIGQUIT: quit, CR LF line ends" >>"${out%.txt}.expect"
	unset "${!R_@}"

	out=$DUMPS/go-wrapped/lockelsewhere-logprefix.$tc.txt
	STDERR_TO=$out start logwrap "$bin/logwrap" "$bin/lockelsewhere"
	kill -QUIT "$VPID"
	wait "$VGROUP" 2>/dev/null || true; VGROUP=""
	sed -E 's/^[0-9]{4}\/[0-9]{2}\/[0-9]{2} [0-9:.]{15} lockelsewhere\[[0-9]+\]: //' "$out" >"$WORK/run/plain.txt"
	expect_go lockelsewhere sigquit "$WORK/run/plain.txt" >"${out%.txt}.expect"
	echo "note: every line went through a supervisor's log.Printf: \"YYYY/MM/DD hh:mm:ss.uuuuuu lockelsewhere[PID]: \" before it (logwrap)" >>"${out%.txt}.expect"
	unset "${!R_@}"
}

for tc in $GO_TOOLCHAINS; do
	bin=$WORK/bin/$tc
	mkdir -p "$bin"
	log "$tc: building"
	for v in lockelsewhere callerholds rwmutex abba chansend poolnofeeder wgnodone sleeploop spinner labels httpblock doublelock selfdump; do
		build_go "$tc" "$v" "$bin/$v"
	done
	build_go "$tc" abba "$bin/abba-nol" -gcflags='all=-N -l'
	version=$(run 30 env GOTOOLCHAIN="$tc" go version)
	echo "$tc: $version" >>"$WORK/versions.txt"

	log "$tc: sigquit and pprof"
	for v in $LONG; do
		one_sigquit "$v" "$tc" "$bin/$v" "$DUMPS/go-sigquit/$v.$tc.txt"
		case $v in
		spinner | sleeploop) one_pprof "$v" "$tc" "$bin/$v" "$DUMPS/go-pprof/$v.$tc.txt" 3 ;;
		*) one_pprof "$v" "$tc" "$bin/$v" "$DUMPS/go-pprof/$v.$tc.txt" ;;
		esac
	done

	# httpblock always serves: one run, the pprof dump first, then SIGQUIT.
	out=$DUMPS/go-sigquit/httpblock.$tc.txt
	STDERR_TO=$out start httpblock "$bin/httpblock"
	fetch "http://$R_addr/debug/pprof/goroutine?debug=2" "$DUMPS/go-pprof/httpblock.$tc.txt"
	expect_go httpblock pprof-debug2 "$DUMPS/go-pprof/httpblock.$tc.txt" >"$DUMPS/go-pprof/httpblock.$tc.expect"
	sigquit
	expect_go httpblock sigquit "$out" >"${out%.txt}.expect"
	{ echo "note: taken right after go-pprof/httpblock.$tc.txt from the same process, so the pprof request's net/http goroutines may still be in it"; } >>"${out%.txt}.expect"
	stop

	log "$tc: GOTRACEBACK=crash"
	out=$DUMPS/go-crash/spinner.$tc.txt
	STDERR_TO=$out start spinner env GOTRACEBACK=crash "$bin/spinner" -spinners 2
	sigquit
	expect_go spinner sigquit "$out" >"${out%.txt}.expect"
	echo "note: GOTRACEBACK=crash: after the first section each M is signalled and prints its own section (separated by -----), so a goroutine can appear more than once; goroutines counts distinct ids" >>"${out%.txt}.expect"
	stop

	log "$tc: fatal deadlock"
	out=$DUMPS/go-fatal/doublelock.$tc.txt
	run 60 "$bin/doublelock" >/dev/null 2>"$out" || true
	{
		echo "verdict: deadlock"
		echo "confidence: high"
		echo "holder: goroutine 1"
		echo "basis: probable"
		echo "cycle: goroutine 1"
		echo "goroutines: $(goroutines "$out")"
		echo "program-goroutines: 1"
		echo "mentions: all goroutines are asleep - deadlock!"
		echo "mentions: main.(*Config).Reload"
		echo "producer: fatal-error"
		echo "note: the runtime itself says deadlock; goroutine 1 locked c.mu in Reload and waits for c.mu again in Get (called through validate): it waits for a lock it holds itself"
	} >"${out%.txt}.expect"

	log "$tc: runtime.Stack"
	out=$DUMPS/go-selfdump/selfdump.$tc.txt
	start selfdump "$bin/selfdump" -n 12 -out "$out"
	wait "$VGROUP" || true; VGROUP=""
	write_selfdump_expect "$out" 12 >"${out%.txt}.expect"
	stop
	out=$DUMPS/go-selfdump/selfdump-truncated.$tc.txt
	start selfdump "$bin/selfdump" -n 12 -out "$out" -buf 2048
	wait "$VGROUP" || true; VGROUP=""
	write_selfdump_expect "$out" 12 truncated >"${out%.txt}.expect"
	stop

	log "$tc: labels"
	for dbg in "" tracebacklabels=1; do
		sfx=${dbg:+.${dbg/=/}}
		out=$DUMPS/go-labels/labels.$tc.sigquit$sfx.txt
		STDERR_TO=$out start labels env ${dbg:+GODEBUG=$dbg} "$bin/labels"
		sigquit
		expect_go labels sigquit "$out" >"${out%.txt}.expect"
		[ -n "$dbg" ] && echo "note: run with GODEBUG=$dbg" >>"${out%.txt}.expect"
		stop
		out=$DUMPS/go-labels/labels.$tc.pprof$sfx.txt
		start labels env ${dbg:+GODEBUG=$dbg} "$bin/labels" -http 127.0.0.1:0
		fetch "http://$R_addr/debug/pprof/goroutine?debug=2" "$out"
		expect_go labels pprof-debug2 "$out" >"${out%.txt}.expect"
		[ -n "$dbg" ] && echo "note: run with GODEBUG=$dbg" >>"${out%.txt}.expect"
		stop
	done

	log "$tc: go test"
	go_tests "$tc"
done

go127_labels
wrapped

log "go: done"
