package report

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
)

// The words of the channel proofs (classify/chanproof.go): who the memory
// scan found referring to the channel a goroutine waits on, and how far
// the scan went.

// Counterparts is, in JSON, a channel wait's waits[].counterparts.
type Counterparts struct {
	// Chans are the channels waited on; Refs the goroutines, none of
	// them waiting on those, whose memory refers to one ([] for none).
	Chans []string `json:"chans"`
	// Waiters is how many goroutines wait on them.
	Waiters int   `json:"waiters"`
	Refs    []Ref `json:"refs"`
	// Basis is how that was established: "memory scan".
	Basis string `json:"basis"`
	// Complete: every stack and every object within Depth pointers of
	// them was read; Cut says where the scan stopped when not.
	Complete bool   `json:"complete"`
	Cut      string `json:"cut,omitempty"`
	Depth    int    `json:"depth"`
	// Globals: the program's globals refer to a channel (any goroutine
	// may reach it); Timer: one may be a timer's (the runtime sends).
	Globals bool `json:"globals,omitempty"`
	Timer   bool `json:"timer,omitempty"`
	// WaitFirst are the Refs that are blocked themselves in a wait these
	// waiters are candidates to end.
	WaitFirst []Ref `json:"wait_first,omitempty"`
	// NobodyLeft: the scan proves no goroutine is left that could
	// complete the operation.
	NobodyLeft bool `json:"nobody_left"`
}

// scanBasis is the basis every counterpart list rests on.
const scanBasis = "memory scan"

func counterparts(cp *classify.Counterparts) *Counterparts {
	if cp == nil {
		return nil
	}
	out := &Counterparts{Chans: append([]string{}, cp.Chans...), Waiters: cp.Waiters, Refs: refs(cp.Refs), Basis: scanBasis, Complete: cp.Complete, Cut: cp.Cut,
		Depth: cp.Depth, Globals: cp.Globals, Timer: cp.Timer, NobodyLeft: cp.Nobody()}
	if len(cp.WaitFirst) > 0 {
		out.WaitFirst = refs(cp.WaitFirst)
	}
	if out.Refs == nil {
		out.Refs = []Ref{}
	}
	return out
}

// counterpartDetail words a channel wait with its counterparts.
func (w *words) counterpartDetail(wt *classify.Wait) string {
	cp := wt.Counterparts
	s := goKindWords(wt.Kind) + " " + strings.Join(cp.Chans, ", ")
	switch {
	case len(cp.Refs) > 0:
		s += "; referred to by " + w.goroutineNames(cp.Refs)
	case cp.Timer:
		s += "; it may be a timer's channel, which the runtime sends on"
	case cp.Globals:
		s += "; the program's globals refer to it: any goroutine may reach it"
	case cp.Complete:
		s += "; no goroutine but its waiters refers to it"
	default:
		s += "; no goroutine but its waiters was found referring to it"
	}
	return s + "; " + scanText(cp)
}

// scanText says what the scan covered.
func scanText(cp *classify.Counterparts) string {
	if cp.Complete {
		return fmt.Sprintf("memory scan: every stack and the globals, %d pointers deep", cp.Depth)
	}
	return "memory scan cut short: " + cp.Cut
}

// goroutineNames names goroutines: "goroutine 1 (main.main)".
func (w *words) goroutineNames(rs []classify.Ref) string {
	var parts []string
	for i, r := range rs {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-i))
			break
		}
		name := fmt.Sprintf("goroutine %d", r.Goroutine)
		if a := w.actor(r); a != nil && len(a.Stack) > 0 {
			name += " (" + ownFunc(a.Stack) + ")"
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, ", ")
}

// chanHeldSummary is the summary of blocked goroutines whose channel a
// goroutine outside them refers to, as the memory scan found: that
// goroutine is there, and when it waits for them itself, each waits for
// the other. "" when no blocked goroutine of the program's own code waits
// so.
func (w *words) chanHeldSummary(as []*classify.Actor) string {
	for _, g := range as {
		wt := w.waitOf[g.Ref]
		if wt == nil || wt.Counterparts == nil || len(wt.Counterparts.Refs) == 0 || classify.UserFrame(g.Stack) < 0 {
			// A library's own goroutine (an HTTP connection's write
			// loop) says less than what the program waits for.
			continue
		}
		cp := wt.Counterparts
		who := fmt.Sprintf("goroutine %d waits", g.Ref.Goroutine)
		if cp.Waiters > 1 {
			who = fmt.Sprintf("%d goroutines wait", cp.Waiters)
		}
		s := fmt.Sprintf("%s in %s [%s] on a channel that %s refers to (%s)", who, Where(g.Stack), g.GoState, w.goroutineNames(cp.Refs), scanText(cp))
		if len(cp.WaitFirst) > 0 {
			first := w.actor(cp.WaitFirst[0])
			state := ""
			if first != nil {
				state = " in " + first.GoState
			}
			s += fmt.Sprintf("; goroutine %d refers to the channel but waits first%s, a wait that names no goroutine (the waiting goroutines are among those that could end it): neither side is seen to move", cp.WaitFirst[0].Goroutine, state)
		}
		return s
	}
	return ""
}

// poolProof is what the scan says of a pool's channel, when it proves
// nobody is left to send: "" otherwise.
func (w *words) poolProof(as []*classify.Actor) string {
	if len(as) == 0 {
		return ""
	}
	wt := w.waitOf[as[0].Ref]
	if wt == nil || !wt.Counterparts.Nobody() {
		return ""
	}
	return "no goroutine but them refers to their channel (" + scanText(wt.Counterparts) + ")"
}
