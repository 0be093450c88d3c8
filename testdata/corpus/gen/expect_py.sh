# expect_py.sh: the expected diagnosis of each Python victim's dump. Sourced.
#
# What each victim's hang is comes from its source (victims/python/*.py);
# thread names and idents come from the victim's ready line (R_* keys).
# Formats that print thread names (py-spy, the sys._current_frames() prints)
# name threads by name; faulthandler (3.8-3.13 print no names) by its
# "0x%016x" ident as it prints it.

# py_thread FORMAT NAME IDENT: how FORMAT's expectation names a thread.
py_thread() { case $1 in faulthandler) printf 'thread %s' "$3" ;; *) printf 'thread %s' "$2" ;; esac; }

# expect_py VICTIM FORMAT FILE [SERIES]
expect_py() {
	local v=$1 fmt=$2 f=$3 series=${4:-} producer basis=probable
	case $fmt in
	pyspy-json) producer=py-spy-json ;;
	pyspy-*) producer=py-spy-text ;;
	faulthandler) producer=faulthandler ;;
	current-frames | gunicorn) producer=current-frames ;;
	esac
	case $v in
	cache_refresh)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "holder: $(py_thread $fmt "$R_holder" "$R_holderident")"
		echo "basis: probable"
		echo "threads: $R_threads"
		echo "mentions: refresh"
		echo "producer: $producer"
		echo "note: refresher holds the module-level RLock cache_lock inside \`with cache_lock:\` in refresh() and waits in a socket recv; $R_waiters wait at \`with cache_lock:\` in handle(); MainThread joins the refresher"
		echo "note: probable: the same module global by name in both functions; an RLock's owner is not in the dump"
		;;
	lock_order)
		[ $fmt = pyspy-locals ] && basis=exact
		local t1 t2
		t1=$(py_thread $fmt worker-1 "$R_identa"); t2=$(py_thread $fmt worker-2 "$R_identb")
		echo "verdict: deadlock"
		echo "confidence: medium"
		echo "holder: $t1"
		echo "basis: $basis"
		echo "holder: $t2"
		echo "basis: $basis"
		echo "cycle: $t1, $t2"
		echo "threads: $R_threads"
		echo "mentions: worker"
		echo "producer: $producer"
		echo "note: both threads run worker(first, second) with the locks swapped; each is inside its outer \`with first:\` and waits at the inner \`with second:\`"
		if [ $basis = exact ]; then
			echo "note: exact: --locals prints first/second of both frames as <_thread.lock at 0x…>; worker-1's second is worker-2's first and the other way round"
		else
			echo "note: probable: which lock is which follows from the arguments the caller passed (Thread args), not from any address in the dump"
		fi
		;;
	acquire_release)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "holder: $(py_thread $fmt "$R_holder" "$R_holderident")"
		echo "basis: probable"
		echo "threads: $R_threads"
		echo "mentions: start_job"
		echo "producer: $producer"
		echo "note: runner called job_lock.acquire() in start_job() and waits in a socket recv before end_job() (which releases); $R_waiters wait in job_lock.acquire() in submit()"
		;;
	signal_logging)
		[ $fmt = pyspy-locals ] && basis=exact
		local t; t=$(py_thread $fmt MainThread "$R_holderident")
		echo "verdict: deadlock"
		echo "confidence: medium"
		echo "holder: $t"
		echo "basis: $basis"
		echo "cycle: $t"
		echo "threads: $R_threads"
		echo "mentions: on_sigchld"
		echo "producer: $producer"
		echo "note: self-deadlock: the main thread is inside Queue.put (holding the queue's non-reentrant mutex, blocked in os.write of a stalled pipe); SIGCHLD ran on_sigchld, which logs through the same QueueHandler into Queue.put again and waits at \`with self.not_full:\` for the mutex it holds itself (the Patroni hang)"
		[ $basis = exact ] && echo "note: exact: --locals shows both Queue.put frames with the same self (<SpillQueue at 0x…>)"
		;;
	pool_dead_feeder)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "threads: $R_threads"
		echo "mentions: worker"
		echo "producer: $producer"
		echo "note: $R_workers wait in queue.get() for jobs; no thread that could put is left (the feeder died); MainThread joins the workers, which never finish"
		;;
	queue_join)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "threads: $R_threads"
		echo "mentions: join"
		echo "producer: $producer"
		echo "note: MainThread waits in queue.join() for tasks no thread is left to finish (the workers died before task_done())"
		;;
	event_wait)
		echo "verdict: blocked"
		echo "confidence: low"
		echo "threads: $R_threads"
		echo "mentions: wait"
		echo "producer: $producer"
		echo "note: MainThread waits on threading.Event().wait() with no timeout and no other thread is alive to set it; low: a dump cannot rule out a signal handler that would"
		;;
	join_forever)
		echo "verdict: blocked"
		echo "confidence: medium"
		echo "threads: $R_threads"
		echo "mentions: read_header"
		echo "producer: $producer"
		echo "note: MainThread waits in Thread.join() for reader, which is blocked in os.read on a pipe nobody writes"
		;;
	subprocess_stdin)
		echo "verdict: blocked"
		echo "confidence: medium"
		[ $fmt != pyspy-subprocesses ] && echo "threads: $R_threads"
		echo "mentions: communicate"
		[ $fmt = pyspy-subprocesses ] && echo "mentions: read_config"
		echo "producer: $producer"
		echo "note: MainThread waits in subprocess.run -> communicate for the output of child $R_child, which waits reading its stdin (a pipe the parent holds open and never writes)"
		[ $fmt = pyspy-subprocesses ] && echo "note: py-spy dump --subprocesses: the parent and its child (Parent Process line) at one moment, not two moments"
		;;
	busy)
		if [ -n "$series" ]; then
			echo "verdict: spinning"
			echo "confidence: medium"
		else
			echo "verdict: working"
			echo "confidence: low"
		fi
		echo "threads: $R_threads"
		echo "mentions: spin_until_ready"
		echo "producer: $producer"
		if [ -n "$series" ]; then
			echo "note: spinner is active in spin_until_ready in every snapshot (a pure-Python loop on a flag nobody sets): spinning; MainThread sleeps"
		elif [ $fmt = pyspy-nonblocking ] && [[ $f == *py3.8.* || $f == *py3.9.* || $f == *py3.10.* ]]; then
			echo "note: spinner's innermost frame is a line of a pure-Python loop (spin_until_ready), so it is running Python code; (active) here is py-spy's default, and one dump cannot show that it makes no progress; MainThread sleeps in a time.sleep loop"
		else
			echo "note: spinner runs spin_until_ready (a pure-Python loop); one dump shows it on a CPU (py-spy: active), not that it makes no progress; MainThread sleeps in a time.sleep loop"
		fi
		[[ $fmt == faulthandler || $fmt == current-frames || $fmt == gunicorn ]] && echo "note: this format has no active/idle flag: that spinner is on a CPU is not in the dump"
		;;
	sleeploop)
		echo "verdict: idle"
		echo "confidence: medium"
		echo "threads: $R_threads"
		echo "mentions: wait_for_file"
		echo "producer: $producer"
		echo "note: the only thread sleeps in a time.sleep loop polling for a file: idle, not blocked"
		;;
	*) die "expect_py: no expectation for $v" ;;
	esac
	case $fmt in
	pyspy-nonblocking)
		echo "note: py-spy --nonblocking: the target was not paused, so stacks may be torn"
		case $f in *py3.8.* | *py3.9.* | *py3.10.*) echo "note: on 3.8-3.10 --nonblocking cannot read OS thread ids: threads print as 0x… pthread ids and a thread whose state py-spy cannot read is (active) by default unless its innermost frame looks idle; here (active) is not evidence of CPU use" ;; esac
		;;
	pyspy-native) echo "note: py-spy --native: native frames (libc, libpython) are mixed into the stacks" ;;
	current-frames) echo "note: printed by the program's own SIGUSR2 handler (traceback.format_stack per sys._current_frames() ident, outermost first); the handler's own frames are on top of MainThread's stack" ;;
	gunicorn) echo "note: gunicorn's worker_int recipe (# Thread: name(ident), File: lines, outermost first) run from the program's SIGUSR2 handler; the handler's frames are on top of MainThread's stack" ;;
	faulthandler) echo "note: faulthandler.register(SIGUSR1, all_threads=True) to a file; thread ids are pthread idents in hex, no names before 3.14" ;;
	esac
	if [ -n "$series" ]; then echo "note: series of $series snapshots about a second apart"; fi
}
