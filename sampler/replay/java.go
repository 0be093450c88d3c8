package replay

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/java"
)

// javaDumps reads one input's JVM thread dumps (jstack, jcmd
// Thread.print, the JSON thread dump) into samples: each dump is a
// snapshot, at its own timestamp when it printed one.
func (r *dumpReader) javaDumps(path string, in io.Reader, saved time.Time) error {
	if rt := r.rec.Target.Runtime; rt != model.RuntimeUnknown && rt != model.RuntimeJava {
		return fmt.Errorf("%s: a JVM thread dump after %s dumps: analyze one program's dumps at a time", name(path), rt)
	}
	// The parser streams the text; an input that does not end in time
	// ends for it there, and the recording says so.
	cut := &cutReader{r: in}
	counted := &countReader{r: cut}
	dumps, err := java.Parse(counted)
	if cut.timedOut {
		r.timedOut(path)
	}
	if counted.n >= java.MaxBytes {
		r.note(model.NoteDumpTooBig, name(path), java.MaxBytes>>20)
	}
	if errors.Is(err, java.ErrNoDump) {
		return fmt.Errorf("%s: no stack dump found: %s", name(path), whatAnalyzeReads)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name(path), err)
	}
	r.rec.Target.Runtime = model.RuntimeJava
	if r.java == nil {
		r.java = &java.Snapshots{}
	}
	for n, d := range dumps {
		if len(r.rec.Samples) >= maxSamples {
			r.note(model.NoteDumpTooMany, name(path), maxSamples)
			break
		}
		which := fmt.Sprintf("%s: %s", name(path), dumpName(len(dumps) > 1, n))
		if d.LongLines > 0 {
			r.note(model.NoteDumpLongLines, which, d.LongLines)
		}
		if d.Truncated && !d.Excerpt {
			r.note(model.NoteDumpTruncated, which)
		}
		if d.Excerpt {
			r.note(model.NoteDumpExcerptJava, which)
		}
		if d.VM != "" && r.rec.Target.RuntimeVersion == "" {
			r.rec.Target.RuntimeVersion = d.VM
		}
		if d.PID != 0 {
			r.rec.Target.PID = d.PID
		}
		at := saved.Add(time.Duration(len(r.rec.Samples)) * time.Second)
		r.rec.StackSource = d.Format
		r.rec.Samples = append(r.rec.Samples, r.java.Sample(d, at))
	}
	return nil
}

// cutReader ends its input at a read given up for the deadline, as EOF,
// and remembers it.
type cutReader struct {
	r        io.Reader
	timedOut bool
}

func (c *cutReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if errors.Is(err, errTimedOut) {
		c.timedOut = true
		err = io.EOF
	}
	return n, err
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
