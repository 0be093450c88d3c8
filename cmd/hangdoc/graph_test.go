package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestFormatDOT: --format dot writes the wait-for graph of a diagnosis for
// Graphviz (here a Python lock-order deadlock read from a dump), with the
// cycle marked, and Graphviz draws it (.ci/run installs graphviz).
func TestFormatDOT(t *testing.T) {
	out, stderr, code := hangdoc(t, "analyze", "--format", "dot", "--src", "../../testdata/corpus/victims/python", "../../testdata/corpus/dumps/py-spy/lock_order.py3.9.txt")
	if code != ExitDeadlock {
		t.Fatalf("exit %d, want %d (deadlock)\n%s", code, ExitDeadlock, stderr)
	}
	if !strings.HasPrefix(out, "digraph hangdoc {") {
		t.Fatalf("not a DOT graph:\n%s", out)
	}
	for _, want := range []string{"t_1313_1325 -> lock_", "-> t_1313_1326 [label=\"held by · inferred\", color=\"#d62728\""} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatalf("Graphviz's dot is not installed (.ci/run installs graphviz): %v", err)
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(out)
	var svg, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 || !bytes.Contains(svg.Bytes(), []byte("</svg>")) {
		t.Fatalf("dot -Tsvg: %v\n%s", err, errb.String())
	}
}
