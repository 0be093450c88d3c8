package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The wait-for graph (graph.go) as a Mermaid flowchart, which GitHub and
// GitLab draw in tickets, and as Graphviz's DOT (--format dot).

// graphLegend says how to read the drawing, under it in Markdown.
const graphLegend = "Marked: the cycle or chain the verdict rests on. An edge is a wait, with what it rests on; a wait with only candidates to end it is not drawn."

// noWaitsText stands in a drawing with nothing to draw.
const noWaitsText = "no actor waits for another"

// hotColour marks the verdict's cycle or chain; classFill colours a node by
// its class.
const hotColour = "#d62728"

var classFill = map[string]string{
	"blocked": "#fde2e1", "deadlock": "#fde2e1", "exited": "#fde2e1",
	"spinning": "#fff3c4", "working": "#dff5e1", "waiting": "#e3ecf7", "idle": "#eeeeee",
}

// mermaidEscaper writes a label's text as Mermaid's entity codes where it
// could end the label or read as markup.
var mermaidEscaper = strings.NewReplacer(
	`"`, "#quot;", "#", "#35;", "<", "#lt;", ">", "#gt;", "&", "#amp;",
	"|", "#124;", "`", "#96;", "%", "#37;", `\`, "#92;",
)

// oneLine makes s one line of valid UTF-8 without control characters.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// labelLine bounds one line of a node's label.
func labelLine(s string) string { return shorten(oneLine(s), 60) }

func mermaidText(s string) string { return mermaidEscaper.Replace(labelLine(s)) }

func mermaidLabel(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = mermaidText(l)
	}
	return strings.Join(out, "<br/>")
}

// mermaidShape wraps a node's label in its kind's shape.
func mermaidShape(n *gnode) string {
	l := `"` + mermaidLabel(n.label) + `"`
	switch n.kind {
	case nodeGroup:
		return "[[" + l + "]]"
	case nodeProcess:
		return "[(" + l + ")]"
	case nodeLock:
		return "{{" + l + "}}"
	case nodeResource:
		return "[/" + l + "/]"
	case nodeTask:
		return "([" + l + "])"
	case nodeMore:
		return ">" + l + "]"
	}
	return "[" + l + "]"
}

// writeMermaid writes the flowchart, without the Markdown fence.
func writeMermaid(w io.Writer, g *waitGraph) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	if len(g.nodes) == 0 {
		fmt.Fprintf(&b, "  none[\"%s\"]\n", mermaidText(noWaitsText))
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		fmt.Fprintf(&b, "  %s%s\n", n.id, mermaidShape(n))
		if n.kind == nodeGroup {
			// Which actors it stands for, as ids: its first, and how many more.
			fmt.Fprintf(&b, "  %%%% %s = %s +%d\n", n.id, nodeID(&gnode{kind: nodeActor, ref: n.ref}, 0), n.more)
		}
	}
	for _, e := range g.edges {
		arrow := "-->"
		if e.fact {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", g.nodes[e.from].id, arrow, mermaidEscaper.Replace(oneLine(edgeText(e))), g.nodes[e.to].id)
	}
	byClass := map[string][]string{}
	var classes []string
	for _, n := range g.nodes {
		if _, ok := classFill[n.class]; ok && n.kind != nodeLock && n.kind != nodeResource {
			if len(byClass[n.class]) == 0 {
				classes = append(classes, n.class)
			}
			byClass[n.class] = append(byClass[n.class], n.id)
		}
	}
	for _, c := range classes {
		fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:#555\n", c, classFill[c])
		fmt.Fprintf(&b, "  class %s %s\n", strings.Join(byClass[c], ","), c)
	}
	hotNodes, hotEdges := g.sortedHot()
	if len(hotNodes) > 0 {
		ids := make([]string, len(hotNodes))
		for i, n := range hotNodes {
			ids[i] = g.nodes[n].id
		}
		fmt.Fprintf(&b, "  classDef hot stroke:%s,stroke-width:3px\n", hotColour)
		fmt.Fprintf(&b, "  class %s hot\n", strings.Join(ids, ","))
	}
	if len(hotEdges) > 0 {
		idx := make([]string, len(hotEdges))
		for i, e := range hotEdges {
			idx[i] = strconv.Itoa(e)
		}
		fmt.Fprintf(&b, "  linkStyle %s stroke:%s,stroke-width:3px\n", strings.Join(idx, ","), hotColour)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// graphMarkdown writes the wait-for graph's section of the Markdown report;
// nothing when no actor waits for another.
func graphMarkdown(b *strings.Builder, r *Report) {
	g := newGraph(r)
	if !g.hasEdges() {
		return
	}
	b.WriteString("#### Wait-for graph\n\n```mermaid\n")
	_ = writeMermaid(b, g)
	b.WriteString("```\n\n")
	b.WriteString(mdText(graphLegend) + "\n\n")
}

// Mermaid writes the wait-for graph of r as a Mermaid flowchart.
func Mermaid(w io.Writer, r *Report) error { return writeMermaid(w, newGraph(r)) }

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func dotText(s string) string { return dotEscaper.Replace(labelLine(s)) }

func dotLabel(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = dotText(l)
	}
	return strings.Join(out, `\n`)
}

var dotShape = map[nodeKind]string{
	nodeActor: "box", nodeGroup: "box3d", nodeProcess: "cylinder", nodeLock: "hexagon",
	nodeResource: "parallelogram", nodeTask: "ellipse", nodeMore: "note",
}

// DOT writes the wait-for graph of r for Graphviz (--format dot): the same
// nodes and edges as the Markdown report's Mermaid flowchart.
func DOT(w io.Writer, r *Report) error {
	g := newGraph(r)
	var b strings.Builder
	b.WriteString("digraph hangdoc {\n  rankdir=LR;\n")
	fmt.Fprintf(&b, "  label=\"%s\";\n  labelloc=t;\n", dotText("hangdoc: "+strings.ToUpper(r.Verdict)+" · pid "+strconv.Itoa(r.Target.PID)+" "+shortCmd(r.Target.Cmdline)))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\"];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	if len(g.nodes) == 0 {
		fmt.Fprintf(&b, "  none [shape=plaintext, style=\"\", label=\"%s\"];\n", dotText(noWaitsText))
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		attrs := []string{"label=\"" + dotLabel(n.label) + "\""}
		if s := dotShape[n.kind]; s != "box" {
			attrs = append(attrs, "shape="+s)
		}
		if f, ok := classFill[n.class]; ok && n.kind != nodeLock && n.kind != nodeResource {
			attrs = append(attrs, "fillcolor=\""+f+"\"")
		}
		if n.hot {
			attrs = append(attrs, "color=\""+hotColour+"\"", "penwidth=3")
		}
		fmt.Fprintf(&b, "  %s [%s];\n", n.id, strings.Join(attrs, ", "))
	}
	for _, e := range g.edges {
		attrs := []string{"label=\"" + dotEscaper.Replace(oneLine(edgeText(e))) + "\""}
		if e.fact {
			attrs = append(attrs, "style=dashed")
		}
		if e.hot {
			attrs = append(attrs, "color=\""+hotColour+"\"", "penwidth=3")
		}
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", g.nodes[e.from].id, g.nodes[e.to].id, strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
