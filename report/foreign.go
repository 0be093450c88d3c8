package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// foreignNote words the stops a run saw that were not its own
// (model.ForeignStop): which samples, and what showed them. "" for none.
func foreignNote(samples []model.Sample) string {
	var at []string
	var signs []string
	for i, s := range samples {
		if len(s.Foreign) == 0 {
			continue
		}
		at = append(at, fmt.Sprint(i+1))
		for _, f := range s.Foreign {
			if w := foreignWords(f); !slices.Contains(signs, w) {
				signs = append(signs, w)
			}
		}
	}
	if len(at) == 0 {
		return ""
	}
	return fmt.Sprintf("samples %s of %d: the target may have been stopped by someone else since the sample before (%s): no context switch or stack change across those intervals counts as movement",
		strings.Join(at, ", "), len(samples), strings.Join(signs, "; "))
}

func foreignWords(f model.ForeignStop) string {
	switch f.Kind {
	case model.ForeignClaim:
		if f.PID > 0 {
			return fmt.Sprintf("another diagnosis, pid %d, held it", f.PID)
		}
		return "another diagnosis held it"
	case model.ForeignTracer:
		return fmt.Sprintf("pid %d traced it", f.PID)
	case model.ForeignStopped:
		if f.TID > 0 {
			return fmt.Sprintf("tid %d was stopped (t or T)", f.TID)
		}
		return "it was stopped (t or T)"
	case model.ForeignRestart:
		return fmt.Sprintf("tid %d came back in restart_syscall, which a stop leaves", f.TID)
	}
	return f.Kind.String()
}
