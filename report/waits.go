package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// What the waits say across processes: each wait in words, the chains of
// waits to where they end, and what the processes at the other end do.

// waits words every wait of the target's threads.
func (w *words) waits() []Wait {
	out := make([]Wait, 0, len(w.d.Waits))
	for i := range w.d.Waits {
		wt := &w.d.Waits[i]
		x := Wait{From: ref(wt.From), Resource: wt.Resource, Kind: wt.Kind.String(), Detail: w.detail(wt), Chain: w.chain(wt),
			NobodyLeft: wt.Nobody, Counterparts: counterparts(wt.Counterparts)}
		if wt.To != nil {
			r := ref(*wt.To)
			x.To = &r
		}
		x.Basis = wt.Basis.String()
		if x.Chain == "" && wt.Basis == classify.EdgeCandidate {
			x.Chain = w.candidateChain(wt)
		}
		if len(wt.Candidates) > 0 {
			x.Candidates, x.CandidateCount = refs(wt.Candidates), wt.CandidateCount
			x.Wakers = x.Candidates
		}
		for _, p := range wt.Polled {
			x.Polled = append(x.Polled, Polled{FD: p.FD, Events: eventsText(p), Resource: p.Resource, Ends: append([]int{}, p.Ends...)})
		}
		x.Path = wt.Path
		if r := wt.Retry; r != nil {
			x.Retry = &Retry{Path: r.Path, Holder: r.Holder, Lock: r.Lock.Class + " " + r.Lock.Type + " " + r.Lock.Range,
				SleepMS: float64(r.SleepNS) / 1e6, SQLite: r.SQLite, Basis: "inferred", Samples: r.Samples}
		}
		if res := w.rec.Resources[wt.Resource]; res.Unix != nil {
			x.Unix = &UnixEnd{Type: res.Unix.Type, Peer: res.Peer}
			if p := w.rec.Resources[res.Peer].Unix; p != nil {
				x.Unix.PeerPath, x.Unix.Listener, x.Unix.Queued, x.Unix.Backlog = p.Path, p.Listening, p.Queued, p.Backlog
			}
		}
		if f := wt.FIFO; f != nil {
			x.FIFO = &FIFO{Path: f.Path, WaitsFor: fifoEnd(f), OpenBy: fifoOpeners(f), Complete: f.Complete}
		}
		x.Anon = anonJSON(wt.Anon)
		x.SysV = wt.SysV
		if sh := wt.Shared; sh != nil {
			x.Shared = &SharedWait{Path: sh.Path, Offset: sh.Offset, Semaphore: posixSemaphore(sh.Path), MappedBy: append([]int{}, wt.MappedBy...), Complete: wt.MappedComplete}
		}
		out = append(out, x)
	}
	return out
}

// candidatesText words a wait's candidates: "could be woken by tid 12
// (peer), tid 13 (worker-1) or 3 more; each of them waits itself".
func (w *words) candidatesText(wt *classify.Wait) string {
	var names []string
	for _, r := range wt.Candidates {
		names = append(names, w.threadLabel(r))
	}
	lead := "could be woken by "
	switch wt.Kind {
	case model.WaitLock, model.WaitPythonLock, model.WaitFileLock:
		lead = "its holder could be "
	case model.WaitThreadExit:
		lead = "the thread it joins could be "
	}
	s := lead + strings.Join(names, ", ")
	if more := wt.CandidateCount - len(wt.Candidates); more > 0 {
		s += fmt.Sprintf(" or %d more", more)
	}
	if a := w.actor(wt.From); a != nil && a.Class == classify.ClassBlocked {
		if wt.CandidateCount == 1 {
			return s + ", which waits itself"
		}
		return s + "; each of them waits itself"
	}
	return s
}

// candidateChain is where a blocked thread's wait that names no one
// leads: to the threads that could end it, none of them proven to —
// "tid 12 futex(…) → could be woken by tid 13 (peer), which waits itself".
func (w *words) candidateChain(wt *classify.Wait) string {
	t := w.actor(wt.From)
	if t == nil || t.Kind != classify.ActorThread || t.Class != classify.ClassBlocked {
		return ""
	}
	s := fmt.Sprintf("tid %d", wt.From.TID)
	if c := callText(t.Syscall); c != "" {
		s += " " + c
	}
	return s + " → " + w.candidatesText(wt)
}

func ref(r classify.Ref) Ref { return Ref{PID: r.PID, TID: r.TID, Goroutine: r.Goroutine} }

func (w *words) lock(id string) *classify.Lock {
	if w.lockIdx == nil {
		// An index: thousands of locks (a JVM dump's monitors) are looked
		// up once per waiter.
		w.lockIdx = make(map[string]*classify.Lock, len(w.d.Locks))
		for i := range w.d.Locks {
			if _, ok := w.lockIdx[w.d.Locks[i].ID]; !ok {
				w.lockIdx[w.d.Locks[i].ID] = &w.d.Locks[i]
			}
		}
	}
	return w.lockIdx[id]
}

// detail words a wait, with what the kernel says of its resource and who
// holds the other end.
func (w *words) detail(wt *classify.Wait) string {
	call := ""
	if c := callText(wt.Syscall); c != "" {
		call = " in " + c
	}
	var s string
	l := w.lock(wt.Lock)
	switch {
	case wt.WithSite != "":
		s = "waits to enter the with-block at " + wt.WithSite
		if wt.To != nil {
			s += fmt.Sprintf(", %sheld by tid %d", surely(l), wt.To.TID)
		}
	case wt.Kind == model.WaitLock && l != nil && l.Holder != nil:
		s = fmt.Sprintf("waits for %s %s %sheld by tid %d", lockKindWord(l.Kind.String()), l.Address, surely(l), l.Holder.TID)
	case wt.Kind == model.WaitLock && l != nil:
		s = fmt.Sprintf("waits on futex %s with %d other threads; holder unknown", l.Address, len(l.Waiters)-1)
	case wt.Kind == model.WaitThreadExit && wt.Joined > 0:
		s = fmt.Sprintf("waits for thread %d to exit (pthread_join)", wt.Joined)
	case wt.Kind == model.WaitThreadExit && wt.Basis == classify.EdgeInferred && len(wt.Candidates) == 1:
		s = fmt.Sprintf("waits for another thread to exit (join): %s, the only other thread", w.threadLabel(wt.Candidates[0]))
	case wt.Kind == model.WaitThreadExit:
		s = "waits for another thread to exit (join)" + call
	case wt.Kind == model.WaitChildExit && wt.Child > 0:
		s = fmt.Sprintf("waits for child pid %d to exit", wt.Child)
	case wt.Kind == model.WaitChildExit:
		s = "waits for any child to exit" + call
	case wt.Kind == model.WaitFIFO && wt.FIFO != nil:
		return w.fifoText(wt)
	case wt.Kind == model.WaitLockRetry && wt.Retry != nil:
		return w.retryText(wt)
	case wt.Anon != nil:
		return anonText(wt)
	case wt.SysV != nil:
		return sysvText(wt)
	case wt.Kind == model.WaitPollFDs:
		var fds []string
		for _, p := range wt.Polled {
			fds = append(fds, w.polledText(p))
		}
		s = kindWords(wt.Kind) + call + ": " + strings.Join(fds, "; ")
		if wt.To == nil || len(wt.Ends) == 0 {
			return s
		}
		return s
	case wt.Counterparts != nil:
		s = w.counterpartDetail(wt)
	case wt.Nobody:
		s = kindWords(wt.Kind) + anyFutex(wt.Resource) + call + fmt.Sprintf("; no live thread is left that could %s", missingWords(wt.Kind))
	case wt.Kind == model.WaitPoll && len(wt.Watches) > 0:
		s = kindWords(wt.Kind) + call + ", watching " + strings.Join(wt.Watches, ", ")
	case wt.Kind == model.WaitUninterruptible && len(wt.KernelStack) > 0:
		s = kindWords(wt.Kind) + call + ", in the kernel at " + strings.Join(wt.KernelStack[:min(4, len(wt.KernelStack))], " ← ")
	case wt.Resource != "" && !strings.HasPrefix(wt.Resource, "futex:"):
		s = kindWords(wt.Kind) + call + " on " + wt.Resource
	default:
		s = kindWords(wt.Kind) + call
	}
	if wt.Path != "" {
		s += pathWords(wt.Syscall.Name) + wt.Path
	}
	if wt.Basis == classify.EdgeCandidate {
		s += "; " + w.candidatesText(wt)
	}
	if wt.Shared != nil {
		s += "; " + sharedWaitText(wt)
	}
	if !wt.Looked {
		return s
	}
	res := w.rec.Resources[wt.Resource]
	if extra := resourceText(res); extra != "" {
		s += "; " + extra
	}
	if res.Unix != nil {
		s += "; " + w.unixText(res)
	}
	if len(wt.Ends) == 0 {
		if wt.Kind != model.WaitChildExit && wt.Resource != "" {
			s += "; no process was found holding the other end"
		}
		return s
	}
	var names []string
	for _, pid := range wt.Ends {
		names = append(names, w.procName(pid)+fdsOf(res, pid))
	}
	return s + "; " + roleWords(wt.Kind) + " " + strings.Join(names, ", ")
}

func eventsText(p classify.Polled) string {
	switch {
	case p.Read && p.Write:
		return "read-write"
	case p.Write:
		return "write"
	}
	return "read"
}

// polledText words one polled descriptor and who is at its other end:
// "fd 5 pipe:[347693] (read), written by pid 22378 (python3 -c …) on fd 1".
func (w *words) polledText(p classify.Polled) string {
	s := fmt.Sprintf("fd %d %s (%s)", p.FD, p.Resource, eventsText(p))
	res := w.rec.Resources[p.Resource]
	if extra := resourceText(res); extra != "" {
		s += ", " + extra
	}
	if len(p.Ends) == 0 {
		return s + ", no other end found"
	}
	if res.Peer != "" {
		res = w.rec.Resources[res.Peer]
	}
	role := "written by"
	if p.Write && !p.Read {
		role = "read by"
	}
	if res.TCP != nil || strings.HasPrefix(p.Resource, "socket:") {
		role = "the other end held by"
	}
	mode := "w"
	if role == "read by" {
		mode = "r"
	} else if role != "written by" {
		mode = ""
	}
	var names []string
	for _, pid := range p.Ends {
		names = append(names, w.procName(pid)+fdsOfMode(res, pid, mode))
	}
	return s + ", " + role + " " + strings.Join(names, ", ")
}

// fdsOf names the descriptors a process holds a resource on: " on fd 0".
func fdsOf(res model.Resource, pid int) string { return fdsOfMode(res, pid, "") }

// fdsOfMode is fdsOf for the descriptors open for mode ("r", "w"; ""
// for any).
func fdsOfMode(res model.Resource, pid int, mode string) string {
	var fds []string
	for _, h := range res.Holders {
		if h.PID == pid && (mode == "" || strings.Contains(h.Mode, mode)) {
			fds = append(fds, strconv.Itoa(h.FD))
		}
	}
	if len(fds) == 0 {
		return ""
	}
	return " on fd " + strings.Join(fds, ", ")
}

// resourceText is what the kernel says of a resource: how full a pipe is,
// a TCP connection's addresses, state and queues.
func resourceText(res model.Resource) string {
	switch {
	case res.Pipe != nil:
		return fmt.Sprintf("%d/%d bytes queued", res.Pipe.Queued, res.Pipe.Capacity)
	case res.TCP != nil:
		c := res.TCP
		return fmt.Sprintf("TCP %s → %s %s, %d bytes to send, %d to read", c.Local, c.Remote, c.State, c.TxQueue, c.RxQueue)
	}
	return ""
}

// procName names a process: "pid 9141 (python3 feeder.py)".
func (w *words) procName(pid int) string {
	if p := w.procs[pid]; p != nil && p.Cmdline != "" {
		return fmt.Sprintf("pid %d (%s)", pid, shortCmd(p.Cmdline))
	}
	for _, p := range w.rec.Family {
		if p.PID == pid {
			return fmt.Sprintf("pid %d (%s)", pid, p.Comm)
		}
	}
	if pid == w.rec.Target.PID || len(w.rec.Samples) > 0 && pid == w.rec.Samples[0].PID {
		return fmt.Sprintf("pid %d (the target)", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}

// shortCmd shortens a command line for a one-line report: the program's
// base name and as much of its arguments as fits.
func shortCmd(s string) string {
	prog, args, _ := strings.Cut(strings.Join(strings.Fields(s), " "), " ")
	if i := strings.LastIndexByte(prog, '/'); i >= 0 {
		prog = prog[i+1:]
	}
	s = strings.TrimSpace(prog + " " + args)
	if r := []rune(s); len(r) > 48 {
		return string(r[:47]) + "…"
	}
	return s
}

// stateOf says in a few words what a process is doing.
func (w *words) stateOf(pid int) string {
	p := w.procs[pid]
	if p == nil {
		return "not sampled"
	}
	if p.Err != "" {
		return "not sampled: " + p.Err
	}
	t := p.Key
	if t == nil {
		return "no threads seen"
	}
	var s string
	switch t.Class {
	case classify.ClassWorking, classify.ClassSpinning:
		s = t.Class.String()
	default:
		s = w.whyText(t)
		if wt := w.waitOf[t.Ref]; wt != nil {
			s = kindWords(wt.Kind)
		}
		if c := callText(t.Syscall); c != "" {
			s += " in " + c
		}
	}
	if t.CPU.Known {
		s += fmt.Sprintf(", %.0f%% CPU", t.CPU.Percent)
	} else if wh := threadWhere(t.Stack); wh != "" {
		s += " at " + wh // read from a dump: its stack, no CPU
	}
	if n := len(p.Actors); n > 1 {
		s += fmt.Sprintf(" (tid %d, one of %d threads)", t.Ref.TID, n)
	}
	return s
}

// threadState says what a thread of any process is doing.
func (w *words) threadState(r classify.Ref) string {
	t := w.actor(r)
	if t == nil {
		return "not seen"
	}
	s := classWord(t)
	if c := callText(t.Syscall); c != "" {
		s += " in " + c
	}
	if !t.CPU.Known {
		if wh := threadWhere(t.Stack); wh != "" {
			return s + " at " + wh // read from a dump: no CPU
		}
		return s
	}
	return s + fmt.Sprintf(", %.0f%% CPU", t.CPU.Percent)
}

func (w *words) threadLabel(r classify.Ref) string {
	if t := w.actor(r); t != nil {
		return fmt.Sprintf("tid %d (%s)", r.TID, t.Name)
	}
	return fmt.Sprintf("tid %d", r.TID)
}

// endName names the process at the other end of a wait, with the
// descriptors it holds there: "pid 9141 (python3 feeder.py) on fd 0".
func (w *words) endName(wt *classify.Wait, pid int) string {
	res := w.rec.Resources[wt.Resource]
	if res.Peer != "" {
		res = w.rec.Resources[res.Peer]
	}
	switch wt.Kind.Role() {
	case model.RoleReadBy:
		return w.procName(pid) + fdsOfMode(res, pid, "r") + w.peerEnd(wt)
	case model.RoleWrittenBy:
		return w.procName(pid) + fdsOfMode(res, pid, "w") + w.peerEnd(wt)
	}
	return w.procName(pid) + fdsOf(res, pid) + w.peerEnd(wt)
}

// peerEnd says what the other end of a TCP connection holds unread: a
// request the server never read, or an answer the client never read.
func (w *words) peerEnd(wt *classify.Wait) string {
	res := w.rec.Resources[wt.Resource]
	if res.Peer == "" {
		return ""
	}
	if c := w.rec.Resources[res.Peer].TCP; c != nil && c.RxQueue > 0 {
		return fmt.Sprintf(" (with %d bytes it has not read)", c.RxQueue)
	}
	return ""
}

// chain words a blocked thread's wait followed to where it ends:
// "tid 9139 write(1, …) → pipe:[32921], 65536/65536 bytes queued → read by
// pid 9141 (python3 feeder.py) on fd 0: sleeping in clock_nanosleep(…), 0% CPU".
func (w *words) chain(wt *classify.Wait) string {
	var b strings.Builder
	for i, st := range wt.Chain {
		next := w.waitOf[st.From]
		if next == nil {
			next = &classify.Wait{From: st.From, Kind: st.Kind, Resource: st.Resource, To: st.To}
		}
		if i > 0 {
			if prev := wt.Chain[i-1]; prev.To != nil && prev.To.IsProcess() {
				b.WriteString(", whose ")
			} else {
				b.WriteString(" → ")
			}
		}
		if t := w.actor(st.From); t != nil && t.Kind == classify.ActorGoroutine {
			fmt.Fprintf(&b, "goroutine %d (%s)", st.From.Goroutine, ownFunc(t.Stack))
		} else {
			fmt.Fprintf(&b, "tid %d", st.From.TID)
		}
		if t := w.actor(st.From); t != nil && t.Kind == classify.ActorThread {
			if c := callText(t.Syscall); c != "" {
				b.WriteString(" " + c)
			}
		}
		if st.Resource != "" && !strings.HasPrefix(st.Resource, "futex:") {
			b.WriteString(" → " + st.Resource)
			if extra := resourceText(w.rec.Resources[st.Resource]); extra != "" {
				b.WriteString(", " + extra)
			}
		}
		role := roleWords(st.Kind)
		switch st.End {
		case classify.EndHere:
		case classify.EndNoOtherEnd:
			b.WriteString(" → no other end found")
		case classify.EndThreadState:
			fmt.Fprintf(&b, " → %s %s: %s", role, w.threadLabel(*st.To), w.threadState(*st.To))
		case classify.EndSelfCycle:
			fmt.Fprintf(&b, " → %s %s (itself: a cycle)", role, w.threadLabel(*st.To))
		case classify.EndActorCycle:
			fmt.Fprintf(&b, " → %s %s (already in this chain: a cycle)", role, w.threadLabel(*st.To))
		case classify.EndOwnProcess:
			verb := "drain it"
			if st.Kind.Role() == model.RoleWrittenBy {
				verb = "write to it"
			}
			var others []string
			if wt := w.waitOf[st.From]; wt != nil {
				for _, pid := range wt.Ends {
					if pid != st.From.PID {
						others = append(others, strconv.Itoa(pid))
					}
				}
			}
			if len(others) > 0 {
				// Its own process holds the other end, and so do others (a
				// pool's workers hold the result pipe's write end).
				fmt.Fprintf(&b, " → %s its own process, or pid %s, which hold that end too", role, strings.Join(others, ", pid "))
				break
			}
			fmt.Fprintf(&b, " → %s its own process: another of its threads must %s", role, verb)
		case classify.EndCycle:
			fmt.Fprintf(&b, " → %s %s (back where the chain began: a cycle)", role, w.endName(next, st.To.PID))
		case classify.EndProcessState:
			fmt.Fprintf(&b, " → %s %s: %s", role, w.endName(next, st.To.PID), w.stateOf(st.To.PID))
		case classify.EndTooDeep:
			fmt.Fprintf(&b, " → %s %s: %s → …", role, w.endName(next, st.To.PID), w.stateOf(st.To.PID))
		default: // goes on
			if st.To.IsProcess() {
				fmt.Fprintf(&b, " → %s %s", role, w.endName(next, st.To.PID))
			} else {
				fmt.Fprintf(&b, " → %s %s", role, w.threadLabel(*st.To))
			}
		}
	}
	return b.String()
}

// beyond says, for a blocked thread of the target whose wait leads to
// another process, who is at the other end and what it is doing.
func (w *words) beyond(r classify.Ref) string {
	wt := w.waitOf[r]
	if wt == nil || wt.To == nil || wt.To.PID == r.PID || !wt.To.IsProcess() {
		return ""
	}
	return fmt.Sprintf("; %s %s, which is %s", roleWords(wt.Kind), w.endName(wt, wt.To.PID), w.stateOf(wt.To.PID))
}

// processes words the peers.
func (w *words) processes() []Process {
	out := make([]Process, 0, len(w.d.Processes))
	nspid := map[int]int{}
	for _, p := range w.rec.Peers {
		if p.NSPID != 0 {
			nspid[p.PID] = p.NSPID
		}
	}
	for _, p := range w.d.Processes {
		out = append(out, Process{PID: p.PID, NSPID: nspid[p.PID], Cmdline: p.Cmdline, Depth: p.Depth, Verdict: p.Verdict.String(), State: w.stateOf(p.PID)})
	}
	return out
}

func orphans(os []classify.Orphan) []Orphan {
	out := make([]Orphan, 0, len(os))
	for _, o := range os {
		out = append(out, Orphan{PID: o.PID, PPID: o.PPID, Command: o.Command, State: o.State.String(), AgeSeconds: o.AgeSeconds, CPUPercent: o.CPUPercent})
	}
	return out
}

// ioChainText words the pipe a goroutine holder in IO wait is stuck on:
// "pipe:[9417289] on fd 9, 65536/65536 bytes queued → read by pid 31160
// (sleep 3600) on fd 0: sleeping in clock_nanosleep(…), 0% CPU".
func (w *words) ioChainText(c *classify.IOChain) string {
	res := w.rec.Resources[c.Pipe]
	verb := "read by"
	if !c.Write {
		verb = "written by"
	}
	var ends []string
	for _, pid := range c.Ends {
		ends = append(ends, fmt.Sprintf("%s%s: %s", w.procName(pid), fdsOf(res, pid), w.stateOf(pid)))
	}
	return fmt.Sprintf("%s%s, %s → %s %s", c.Pipe, fdsOf(res, w.rec.Samples[0].PID), resourceText(res), verb, strings.Join(ends, "; "))
}
