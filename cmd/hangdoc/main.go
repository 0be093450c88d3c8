// Command hangdoc tells why a process has stopped making progress.
package main

import (
	"os"

	"github.com/hangdoc/hangdoc/internal/reaper"
	"github.com/hangdoc/hangdoc/model"
)

// startNotes are said in every live report: what main could not set up.
var startNotes []model.Note

func main() {
	// A helper's descendant that leaves the helper's process group
	// reparents to hangdoc, which kills it when the helper ends, instead
	// of to init, where it would outlive hangdoc (internal/reaper). Only
	// the binary is a subreaper: the tests that run Main in their own
	// process have victims of their own it must not adopt.
	// A demo's victim is this binary too: it starts no helper.
	if len(os.Args) > 1 && os.Args[1] == victimCommand {
		os.Exit(int(Main(os.Args[1:], os.Stdout, os.Stderr)))
	}
	if err := reaper.Start(); err != nil {
		startNotes = append(startNotes, model.NewNote(model.NoteNoReaper, err))
	}
	os.Exit(int(Main(os.Args[1:], os.Stdout, os.Stderr)))
}
