# expect_go.sh: the expected diagnosis of each Go victim's dump. Sourced.
#
# What each victim's hang is comes from its source (victims/go/*/main.go);
# which goroutine is which comes from the victim's own ready line (R_* keys),
# never from reading the dump. The dump is read only for facts about the file
# itself: how many goroutine records it holds, and whether the addresses that
# would make a holder exact are printed (not stale "0x…?") in it.

# expect_go VICTIM PRODUCER FILE [SERIES]: print the .expect for FILE.
expect_go() {
	local v=$1 producer=$2 f=$3 series=${4:-} basis holder prog="" http=0
	case $producer in pprof-debug2) http=1 ;; esac
	case $v in
	lockelsewhere)
		# Exact when the holder's receiver (s) equals the waiters' mutex
		# address: mu is Service's first field, so &s.mu == s.
		basis=probable
		local recv addr
		recv=$(frame_arg "$f" "$R_holder" 'main.(*Service).refresh' 1)
		addr=$(lock_addr "$f" "${R_waiters%%,*}")
		[ -n "$addr" ] && [ "$recv" = "$addr" ] && basis=exact
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" "$basis"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 5"
		echo "mentions: main.(*Service).refresh"
		[ -n "$addr" ] && echo "mentions: $addr"
		echo "producer: $producer"
		echo "note: goroutine $R_holder took s.mu in refresh() and waits on a channel nobody sends to; goroutines $R_waiters wait for s.mu in get()"
		[ $basis = exact ] && echo "note: exact: refresh's receiver $recv is the address the waiters' lockSlow waits on, and mu is Service's first field"
		[ $basis = probable ] && echo "note: probable: same receiver type and expression s.mu; the dump does not print the holder's receiver unstale"
		;;
	callerholds)
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 4"
		echo "mentions: main.(*Loader).Reload"
		echo "producer: $producer"
		echo "note: goroutine $R_holder locked l.cache.mu in (*Loader).Reload and, holding it, waits on a channel in fetch() (a callee); goroutines $R_waiters wait for c.mu in (*Cache).Get"
		echo "note: probable, not exact: l.cache.mu and c.mu are the field mu of one type (*Cache); the dump shows the Loader, never the Cache's address"
		;;
	rwmutex)
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 5"
		echo "mentions: main.(*Registry).snapshot"
		echo "mentions: main.(*Registry).put"
		echo "producer: $producer"
		echo "note: goroutine $R_holder holds r.mu.RLock() in snapshot() and waits on a channel send; goroutine $R_writer queues in r.mu.Lock() in put(); goroutines $R_waiters queue in RLock in lookup() behind the queued writer"
		;;
	abba | abba-nol)
		# Exact when alice's and bob's own frames print both mutex
		# addresses and each waits on the one the other took first.
		basis=probable
		local a1 a2 b1 b2 wa wb
		a1=$(frame_arg "$f" "$R_alice" main.alice 1); a2=$(frame_arg "$f" "$R_alice" main.alice 2)
		b1=$(frame_arg "$f" "$R_bob" main.bob 1); b2=$(frame_arg "$f" "$R_bob" main.bob 2)
		wa=$(lock_addr "$f" "$R_alice"); wb=$(lock_addr "$f" "$R_bob")
		if [ -n "$wa" ] && [ -n "$wb" ] && [ "$a1" = "$b1" ] && [ "$a2" = "$b2" ] &&
			[ "$wa" = "$a2" ] && [ "$wb" = "$a1" ] && [[ $a1$a2 != *'?'* ]]; then
			basis=exact
		fi
		echo "verdict: deadlock"
		echo "confidence: medium"
		holder_lines "$R_alice" $basis
		holder_lines "$R_bob" $basis
		echo "cycle: goroutine $R_alice, goroutine $R_bob"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 3"
		echo "mentions: main.alice"
		echo "mentions: main.bob"
		[ -n "$wa" ] && echo "mentions: $wa"
		[ -n "$wb" ] && echo "mentions: $wb"
		echo "producer: $producer"
		echo "note: alice (goroutine $R_alice) holds a and waits for b; bob (goroutine $R_bob) holds b and waits for a"
		if [ $basis = exact ]; then
			echo "note: exact: both frames print (a=$a1, b=$a2); alice waits on $wa = b, bob on $wb = a"
		else
			echo "note: probable: each waits on an address the dump prints ($wa, $wb) but the held one is printed stale (0x…?) or not at all; the holder follows from the source (a parameter by the argument its caller passed)"
		fi
		;;
	chansend)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 4"
		echo "mentions: main.produce"
		echo "producer: $producer"
		echo "note: goroutines $R_senders wait in chan send in produce(); no goroutine receives (the consumer returned); an idle accept loop keeps the runtime from declaring a deadlock, so nothing in the dump proves a cycle"
		;;
	poolnofeeder)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 5"
		echo "mentions: main.worker"
		echo "mentions: sync.(*WaitGroup).Wait"
		echo "producer: $producer"
		echo "note: goroutine 1 waits in wg.Wait for workers $R_workers, which wait in chan receive (range jobs) for a feeder that is gone (no goroutine in the dump sends on jobs)"
		;;
	wgnodone)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 2"
		echo "mentions: main.fetchAll"
		echo "producer: $producer"
		echo "note: goroutine 1 waits in wg.Wait in fetchAll; no goroutine that could call Done is left (only the listener); the wait reason is semacquire in go1.22-1.23, sync.WaitGroup.Wait from go1.24"
		;;
	sleeploop)
		echo "verdict: idle"
		echo "confidence: medium"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: $((1 + http))"
		echo "mentions: main.waitForFile"
		echo "producer: $producer"
		echo "note: goroutine 1 polls for a file in a time.Sleep loop: sleeping, not blocked on anything"
		;;
	spinner)
		local n; n=$(tr ',' '\n' <<<"$R_spinners" | wc -l | tr -d ' ')
		if [ -n "$series" ]; then
			echo "verdict: spinning"
			echo "confidence: medium"
		else
			echo "verdict: working"
			echo "confidence: low"
		fi
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: $((1 + n))"
		echo "mentions: main.spinUntilReady"
		echo "producer: $producer"
		if [ -n "$series" ]; then
			echo "note: goroutine(s) $R_spinners are in main.spinUntilReady (a CAS loop) in every snapshot: spinning"
		else
			echo "note: goroutine(s) $R_spinners run main.spinUntilReady (a CAS loop); one dump shows them on a CPU, it cannot show that they make no progress"
		fi
		echo "note: a spinner's state is [running] or [runnable] depending on the moment: the dump stops the world and preempts it (SIGQUIT dumps show runtime.asyncPreempt on top of it; pprof debug=2 hides runtime frames and shows [runnable] with only inlined frames)"
		;;
	labels)
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 6"
		echo "mentions: main.holdLock"
		if grep -aqE '^goroutine [0-9]+ .*(request|labels)' "$f"; then
			echo "mentions: r1"
		fi
		echo "producer: $producer"
		echo "note: goroutine $R_holder (pprof label request=r1) holds mu and waits on a channel; $R_waiters wait for mu (r2, r3, and $R_unlabeled without labels); $R_chan (request=r4, tenant=\"acme, inc. [eu]\") waits on a channel"
		if grep -aqE '^goroutine [0-9]+ .*(request|labels)' "$f"; then
			echo "note: labels are printed in goroutine headers here; every labeled goroutine must be kept"
		else
			echo "note: this toolchain/GODEBUG prints no labels in headers"
		fi
		;;
	httpblock)
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$f")"
		echo "mentions: main.handleSlow"
		echo "producer: $producer"
		echo "note: handler goroutine $R_holder (/slow) holds the package-level mu and waits on a channel for a backend that never answers; handlers $R_waiters (/query) wait for mu; handler $R_chan (/events) waits on a channel with no sender; goroutine 1 is the idle accept loop"
		echo "note: the handler goroutines (created by net/http.(*Server).Serve) are the program's; program-goroutines left out because net/http's own per-connection background readers are neither clearly the program's nor machinery"
		;;
	rwclosures)
		echo "verdict: blocked"
		echo "confidence: medium"
		holder_lines "$R_holder" probable
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 5"
		echo "mentions: main.main.func1"
		echo "producer: $producer"
		echo "note: one sync.RWMutex mu, a local of main captured by three closures: goroutine $R_holder took mu.RLock() and waits on a channel on the same line; goroutine $R_writer queues in mu.Lock(); goroutines $R_waiters queue in mu.RLock() behind the writer. One lock: the same variable of main, wherever it is locked"
		echo "note: probable: the same captured variable in source; the dump prints no lock address unstale"
		;;
	copylock)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 3"
		echo "mentions: main.Counter.Get"
		echo "mentions: copylocks"
		echo "producer: $producer"
		echo "note: goroutine $R_copier locks c.mu in Counter.Get, a value receiver: its own copy of the struct, copied while goroutine $R_holder held the original; nothing can unlock the copy, and no holder may be named (the original's holder holds another lock)"
		;;
	rlockwriter)
		echo "verdict: deadlock"
		echo "confidence: medium"
		echo "cycle: goroutine $R_reader, goroutine $R_writer"
		echo "goroutines: $(goroutines "$f")"
		echo "program-goroutines: 3"
		echo "mentions: main.(*Cache).Len"
		echo "mentions: read-locks it again"
		echo "producer: $producer"
		echo "note: goroutine $R_reader holds c.mu.RLock() in Stats and calls Len, which read-locks it again behind goroutine $R_writer, queued in c.mu.Lock() in Put: the writer waits for the reader, the reader for the writer"
		;;
	*) die "expect_go: no expectation for $v" ;;
	esac
	if [ $http = 1 ]; then
		echo "note: the pprof request's own goroutine (runtime/pprof.writeGoroutineStacks, created by net/http.(*Server).Serve) is profiler machinery, not counted in program-goroutines"
	fi
	if [ -n "$series" ]; then
		echo "note: series of $series snapshots about a second apart"
	fi
}
