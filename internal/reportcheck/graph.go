package reportcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The wait-for graph in the Markdown report (report/graph.go), checked
// against the JSON's waits, locks and cycles: every edge the drawing makes
// between actors rests on a proven or inferred wait, a lock's waiter and
// its named holder, or a step of a cycle (never on a candidate); every
// step of every cycle is drawn and marked; every such wait between two
// actors that are drawn is drawn.

// graphReport is the part of the JSON the drawing is made from.
type graphReport struct {
	Target struct {
		PID int `json:"pid"`
	} `json:"target"`
	Waits []struct {
		From     ref    `json:"from"`
		To       *ref   `json:"to"`
		Basis    string `json:"basis"`
		Resource string `json:"resource"`
	} `json:"waits"`
	Locks []struct {
		ID      string `json:"id"`
		Holder  *ref   `json:"holder"`
		Waiters []ref  `json:"waiters"`
		Readers []ref  `json:"readers"`
	} `json:"locks"`
	Cycles [][]ref `json:"cycles"`
}

// key is the id of the node a ref is drawn as (report/graph.go's nodeID).
func (g *graphReport) key(x ref) string {
	switch {
	case x.Goroutine != 0:
		return fmt.Sprintf("g_%d_%d", x.PID, x.Goroutine)
	case x.TID != 0 && (x.PID == g.Target.PID || x.PID == 0):
		return fmt.Sprintf("t_%d_%d", g.Target.PID, x.TID)
	}
	return "p_" + strconv.Itoa(x.PID)
}

var (
	mermaidNode  = regexp.MustCompile(`^  ([A-Za-z0-9_]+)(?:\[|\{\{|>|\(\[)`)
	mermaidEdge  = regexp.MustCompile(`^  ([A-Za-z0-9_]+) (-->|-\.->)\|"([^"|]*)"\| ([A-Za-z0-9_]+)$`)
	mermaidGroup = regexp.MustCompile(`^  %% (grp_\d+) = ([A-Za-z0-9_]+) \+(\d+)$`)
	mermaidHot   = regexp.MustCompile(`^  class ([A-Za-z0-9_,]+) hot$`)
	mermaidLinks = regexp.MustCompile(`^  linkStyle ([0-9,]+) `)
)

// drawing is a Mermaid flowchart as the checks read it.
type drawing struct {
	nodes    map[string]bool
	rep      map[string]string // a group's id → its first member's
	edges    []drawnEdge
	hotNodes map[string]bool
	more     bool
}

type drawnEdge struct {
	from, to, label string
	fact, hot       bool
}

// mermaidBlock is the Markdown's Mermaid flowchart, nil for none.
func mermaidBlock(md []byte) []byte {
	_, rest, ok := bytes.Cut(md, []byte("```mermaid\n"))
	if !ok {
		return nil
	}
	block, _, _ := bytes.Cut(rest, []byte("```"))
	return block
}

func readDrawing(block []byte) (*drawing, []Problem) {
	d := &drawing{nodes: map[string]bool{}, rep: map[string]string{}, hotNodes: map[string]bool{}}
	var out []Problem
	hotLinks := map[int]bool{}
	for i, line := range strings.Split(strings.TrimRight(string(block), "\n"), "\n") {
		switch m := mermaidEdge.FindStringSubmatch(line); {
		case i == 0:
			if line != "flowchart LR" {
				out = append(out, Problem{Where: "markdown graph", What: "not a flowchart", Text: line})
			}
		case m != nil:
			d.edges = append(d.edges, drawnEdge{from: m[1], to: m[4], label: m[3], fact: m[2] == "-.->"})
		case mermaidGroup.MatchString(line):
			g := mermaidGroup.FindStringSubmatch(line)
			d.rep[g[1]] = g[2]
		case mermaidHot.MatchString(line):
			for _, id := range strings.Split(mermaidHot.FindStringSubmatch(line)[1], ",") {
				d.hotNodes[id] = true
			}
		case mermaidLinks.MatchString(line):
			for _, n := range strings.Split(mermaidLinks.FindStringSubmatch(line)[1], ",") {
				k, _ := strconv.Atoi(n)
				hotLinks[k] = true
			}
		case mermaidNode.MatchString(line):
			id := mermaidNode.FindStringSubmatch(line)[1]
			d.nodes[id] = true
			d.more = d.more || id == "more"
		case strings.HasPrefix(line, "  classDef ") || strings.HasPrefix(line, "  class "):
		default:
			out = append(out, Problem{Where: "markdown graph", What: "a line the flowchart should not have", Text: line})
		}
	}
	for i := range d.edges {
		d.edges[i].hot = hotLinks[i]
	}
	return d, out
}

// actorID is the ref id a node stands for ("" for a lock, a resource).
func (d *drawing) actorID(id string) string {
	if r, ok := d.rep[id]; ok {
		return r
	}
	if strings.HasPrefix(id, "t_") || strings.HasPrefix(id, "g_") || strings.HasPrefix(id, "p_") {
		return id
	}
	return ""
}

// pair is a wait drawn from one actor to another, directly or through a
// lock or a resource; hot when each of its edges is.
type pair struct {
	from, to string
	hot      bool
}

func (d *drawing) pairs() []pair {
	outOf := map[string][]drawnEdge{}
	for _, e := range d.edges {
		outOf[e.from] = append(outOf[e.from], e)
	}
	var out []pair
	for _, e := range d.edges {
		a := d.actorID(e.from)
		if a == "" || e.fact {
			continue
		}
		if b := d.actorID(e.to); b != "" {
			out = append(out, pair{a, b, e.hot})
			continue
		}
		for _, f := range outOf[e.to] {
			if b := d.actorID(f.to); b != "" && !f.fact {
				out = append(out, pair{a, b, e.hot && f.hot})
			}
		}
	}
	return out
}

// graphWords checks the Markdown's wait-for graph against the JSON.
func graphWords(markdown, jsonDoc []byte) []Problem {
	if markdown == nil {
		return nil
	}
	var r graphReport
	if err := json.Unmarshal(jsonDoc, &r); err != nil {
		return nil // Check says so
	}
	block := mermaidBlock(markdown)
	if block == nil {
		if r.hasEdges() {
			return []Problem{{Where: "markdown", What: "no wait-for graph, but the JSON has waits between actors"}}
		}
		return nil
	}
	d, out := readDrawing(block)
	for _, e := range d.edges {
		if strings.Contains(e.label, "candidate") {
			out = append(out, Problem{Where: "markdown graph", What: "a candidate drawn as an edge", Text: e.from + " → " + e.to})
		}
	}
	drawnPair := map[[2]string]*pair{}
	ps := d.pairs()
	for i := range ps {
		p := &ps[i]
		if old := drawnPair[[2]string{p.from, p.to}]; old == nil || p.hot {
			drawnPair[[2]string{p.from, p.to}] = p
		}
		if !r.backs(p.from, p.to) {
			out = append(out, Problem{Where: "markdown graph", What: "an edge that no proven or inferred wait, named holder or cycle of the JSON makes", Text: p.from + " → " + p.to})
		}
	}
	// Every step of every cycle, drawn and marked.
	for _, c := range r.Cycles {
		for i, m := range c {
			a, b := r.key(m), r.key(c[(i+1)%len(c)])
			if a == b && len(c) > 1 {
				continue
			}
			if !d.nodes[a] || !d.nodes[b] {
				if !d.more {
					out = append(out, Problem{Where: "markdown graph", What: "a cycle's member not drawn", Text: a + " → " + b})
				}
				continue
			}
			p := drawnPair[[2]string{a, b}]
			switch {
			case p == nil && d.more:
				// The lock or pipe between them may be past the bound.
			case p == nil:
				out = append(out, Problem{Where: "markdown graph", What: "a cycle's step not drawn", Text: a + " → " + b})
			case !p.hot || !d.hotNodes[a] || !d.hotNodes[b]:
				out = append(out, Problem{Where: "markdown graph", What: "a cycle's step not marked", Text: a + " → " + b})
			}
		}
	}
	// Every proven or inferred wait between two drawn actors, drawn (in a
	// drawing that is whole: past the bound, the lock or pipe between two
	// drawn actors may be left out).
	for _, w := range r.Waits {
		if d.more || w.To == nil || w.Basis != "proven" && w.Basis != "inferred" {
			continue
		}
		a, b := r.key(w.From), r.key(*w.To)
		if d.nodes[a] && d.nodes[b] && drawnPair[[2]string{a, b}] == nil {
			out = append(out, Problem{Where: "markdown graph", What: "a " + w.Basis + " wait not drawn", Text: a + " → " + b})
		}
	}
	return out
}

// hasEdges reports whether the JSON has a wait between actors to draw.
func (r *graphReport) hasEdges() bool {
	if len(r.Cycles) > 0 {
		return true
	}
	for _, w := range r.Waits {
		if w.To != nil && (w.Basis == "proven" || w.Basis == "inferred") {
			return true
		}
	}
	for _, l := range r.Locks {
		if len(l.Waiters) > 0 && (l.Holder != nil || len(l.Readers) > 0) {
			return true
		}
	}
	return false
}

// backs reports whether the JSON makes a wait from node a to node b.
func (r *graphReport) backs(a, b string) bool {
	for _, w := range r.Waits {
		if w.To != nil && (w.Basis == "proven" || w.Basis == "inferred") && r.key(w.From) == a && r.key(*w.To) == b {
			return true
		}
	}
	for _, l := range r.Locks {
		held := l.Readers
		if l.Holder != nil {
			held = append(held, *l.Holder)
		}
		if !r.anyKey(held, b) {
			continue
		}
		if r.anyKey(l.Waiters, a) {
			return true
		}
	}
	for _, c := range r.Cycles {
		for i, m := range c {
			if r.key(m) == a && r.key(c[(i+1)%len(c)]) == b {
				return true
			}
		}
	}
	return false
}

func (r *graphReport) anyKey(refs []ref, k string) bool {
	for _, x := range refs {
		if r.key(x) == k {
			return true
		}
	}
	return false
}
