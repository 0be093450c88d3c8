package classify

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Channel proofs: what the memory reader's channel scan (model.ChanScan,
// Goroutine.HeldChans, on a live run's last sample) says of the goroutines
// that could still complete a channel operation others wait in. A
// goroutine whose stack, or a heap object its stack leads to, holds the
// channel's address is a possible counterpart; when the scan covered
// everything and names none but the channel's own waiters, no goroutine is
// left that could: "nobody left", proven. A counterpart is a candidate,
// never an edge of the wait-for graph: a word that looks like the
// address is all the scan sees.

// Counterparts is the scan's answer for one goroutine's channel wait.
type Counterparts struct {
	// Chans are the channels it waits on (several in a select).
	Chans []string
	// Refs are the goroutines, none of them waiting on those channels,
	// whose memory refers to one of them, lowest id first.
	Refs []Ref
	// Globals: the program's globals refer to one of them, so any
	// goroutine may reach it. Timer: one may be a timer's channel, which
	// the runtime sends on.
	Globals, Timer bool
	// Complete: the scan read every stack and every object within Depth
	// pointers of them; otherwise Cut says where it stopped.
	Complete bool
	Cut      string
	Depth    int
	// WaitFirst are the Refs blocked themselves in a wait that names
	// nobody (sync.WaitGroup.Wait) which these waiters are candidates to
	// end (candidates, not proven wakers).
	WaitFirst []Ref
	// Waiters is how many goroutines wait on Chans (a select's on any of
	// them); waiters are they.
	Waiters int
	waiters []int64
	// first: WaitFirst is worked out.
	first bool
}

// Nobody reports a proof that no goroutine is left that could complete
// the wait: a complete scan named nobody, no global refers to the
// channel, and no timer sends on it.
func (c *Counterparts) Nobody() bool {
	return c != nil && c.Complete && len(c.Refs) == 0 && !c.Globals && !c.Timer
}

// maxChanWaits bounds the channel waits a process lists.
const maxChanWaits = 200

// chanProofs works out, from the last sample's channel scan, the
// counterparts of every goroutine that waits on channels in it. Goroutines
// that wait on the same channels share one answer: 20,000 workers on one
// channel cost one.
func (s *goScene) chanProofs() {
	p := s.p
	var last *model.Sample
	for i := len(p.samples) - 1; i >= 0; i-- {
		if p.samples[i].Goroutines != nil {
			last = &p.samples[i]
			break
		}
	}
	if last == nil || last.ChanScan == nil {
		return
	}
	scan := last.ChanScan
	waiters := map[string]map[int64]bool{}
	holders := map[string][]int64{}
	for _, g := range last.Goroutines {
		for _, c := range g.WaitChans {
			if waiters[c] == nil {
				waiters[c] = map[int64]bool{}
			}
			waiters[c][g.ID] = true
		}
		if a := p.byGID[g.ID]; a != nil && a.Aside == AsideRuntime {
			continue // the runtime's own never completes a program's channel operation
		}
		for _, c := range g.HeldChans {
			holders[c] = append(holders[c], g.ID)
		}
	}
	p.chanProof = map[int64]*Counterparts{}
	byKey := map[string]*Counterparts{}
	for _, g := range last.Goroutines {
		if len(g.WaitChans) == 0 || p.byGID[g.ID] == nil {
			continue
		}
		key := strings.Join(g.WaitChans, ",")
		if cp := byKey[key]; cp != nil {
			p.chanProof[g.ID] = cp
			continue
		}
		cp := &Counterparts{Chans: g.WaitChans, Complete: scan.Complete, Cut: scan.Cut, Depth: scan.Depth, Refs: []Ref{}}
		seen := map[int64]bool{}
		all := map[int64]bool{}
		for _, c := range g.WaitChans {
			for w := range waiters[c] {
				all[w] = true
			}
		}
		for _, c := range g.WaitChans {
			for _, h := range holders[c] {
				if all[h] || seen[h] {
					continue
				}
				seen[h] = true
				cp.Refs = append(cp.Refs, Ref{PID: p.pid, Goroutine: h})
			}
			cp.Globals = cp.Globals || slices.Contains(scan.Globals, c)
			cp.Timer = cp.Timer || slices.Contains(scan.Timers, c)
		}
		for w := range all {
			cp.waiters = append(cp.waiters, w)
		}
		slices.Sort(cp.waiters)
		cp.Waiters = len(cp.waiters)
		slices.SortFunc(cp.Refs, func(a, b Ref) int { return cmp.Compare(a.Goroutine, b.Goroutine) })
		byKey[key] = cp
		p.chanProof[g.ID] = cp
	}
}

// chanCounterparts is the channel scan's answer for a goroutine that waits
// on channels; nil when there was no scan or it waits on none. It is what
// a "nobody left" verdict can ask: Nobody() is the proof.
func (p *proc) chanCounterparts(g *Actor) *Counterparts {
	if g == nil || g.Kind != ActorGoroutine {
		return nil
	}
	return p.chanProof[g.Ref.Goroutine]
}

// chanHeld reports a goroutine whose channel the scan found referred to by
// a goroutine outside its waiters: one that is there, so it is not a
// worker whose feeder is gone.
func (p *proc) chanHeld(g *Actor) bool {
	cp := p.chanCounterparts(g)
	return cp != nil && len(cp.Refs) > 0
}

// chanFed parks behind its counterpart a receiver whose channel a
// goroutine that is not blocked refers to (a server's main that accepts
// and would hand out the work): it waits for work from one that is there,
// idle as that one is, not for a feeder that is gone. With every
// counterpart blocked, or parked for good, it stays blocked: the summary
// says on whom.
func (s *goScene) chanFed() {
	p := s.p
	for i := range p.goroutines {
		g := &p.goroutines[i]
		cp := p.chanCounterparts(g)
		if cp == nil || len(cp.Refs) == 0 || !receiving(*g) {
			continue
		}
		for _, r := range cp.Refs {
			// One parked for good (select {}) sends nothing either.
			if o := p.byGID[r.Goroutine]; o != nil && o.Class != ClassBlocked && o.Why.Rule != WhyGoSelectForever {
				g.Class, g.Why = ClassIdle, Why{Rule: WhyGoFedBy, Kind: g.Wait, Other: &o.Ref}
				break
			}
		}
	}
}

// chanWaits lists the channel waits the scan answered, with their
// counterparts, at most maxChanWaits.
func (s *goScene) chanWaits() {
	p := s.p
	if len(p.chanProof) == 0 {
		return
	}
	n := 0
	for i := range p.goroutines {
		g := &p.goroutines[i]
		cp := p.chanProof[g.Ref.Goroutine]
		if cp == nil || g.Class != ClassBlocked && g.Class != ClassIdle || g.Wait != model.WaitChannel && g.Wait != model.WaitSelect {
			continue
		}
		if n++; n > maxChanWaits {
			return
		}
		if !cp.first {
			cp.first, cp.WaitFirst = true, p.waitFirst(cp)
		}
		p.waits = append(p.waits, Wait{From: g.Ref, Kind: g.Wait, Resource: "chan:" + cp.Chans[0], Counterparts: cp})
	}
}

// canEnd reports whether goroutine o is one of the candidates that could
// end a's wait that names nobody (a WaitGroup's), as settle counts them:
// a goroutine of the program's own, not aside, not waiting at a's place
// (the same wait at the same stack).
func canEnd(o, a *Actor) bool {
	if o == nil || o == a || o.Aside != AsideNone || UserFrame(o.Stack) < 0 {
		return false
	}
	return o.Wait != a.Wait || goStackKey(o.Stack) != goStackKey(a.Stack)
}

// waitFirst is, of a wait's counterparts, those blocked themselves in a
// wait that its waiters are candidates to end (main in wg.Wait() for the
// workers that wait on the channel it refers to): each waits for the
// other.
func (p *proc) waitFirst(cp *Counterparts) []Ref {
	var out []Ref
	for _, r := range cp.Refs {
		a := p.byGID[r.Goroutine]
		if a == nil || a.Class != ClassBlocked || a.Wait.Role() != model.RoleWokenBy {
			continue
		}
		if !slices.ContainsFunc(cp.waiters, func(w int64) bool { return !canEnd(p.byGID[w], a) }) {
			out = append(out, r)
		}
	}
	return out
}
