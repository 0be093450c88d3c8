package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
	"github.com/hangdoc/hangdoc/sampler/python"
)

// Dumps reads stack dumps from files ("-" is stdin) and records them as
// samples, in order: one file is one snapshot, several are snapshots in
// time, compared like live samples (what moved, what did not). It reads
// py-spy's text and JSON dumps and CPython's faulthandler dumps; there is
// no kernel evidence in a file, so CPU, wchan and syscalls are unknown.
func Dumps(paths []string, stdin io.Reader, version string) (model.Recording, error) {
	rec := model.Recording{
		HangdocVersion: version,
		Host:           sampler.DescribeHost(),
		Samples:        []model.Sample{},
	}
	tids := map[string]int{}
	var formats []model.Format
	for _, path := range paths {
		b, saved, err := readInput(path, stdin)
		if err != nil {
			return rec, err
		}
		dumps, err := python.Parse(b)
		if errors.Is(err, python.ErrNoDump) {
			if err := addGoDumps(&rec, path, b, saved); err != nil {
				return rec, err
			}
			continue
		}
		if err != nil {
			return rec, fmt.Errorf("%s: %w", path, err)
		}
		if rec.Target.Runtime == model.RuntimeGo {
			return rec, fmt.Errorf("%s: a Python dump after Go goroutine dumps: analyze one program's dumps at a time", path)
		}
		rec.Target.Runtime = model.RuntimePython
		for _, d := range dumps {
			if d.Truncated {
				rec.Notes = append(rec.Notes, fmt.Sprintf("%s: the dump is truncated; it was read as far as it goes", path))
			}
			if d.PID != 0 {
				rec.Target.PID = d.PID
			}
			if d.Python != "" {
				rec.Target.RuntimeVersion = d.Python
			}
			formats = append(formats, d.Format)
			// Dumps in one file a second apart, from when the file was saved:
			// what a file does not say, the report does not invent beyond that.
			at := saved.Add(time.Duration(len(rec.Samples)) * time.Second)
			sm := snapshot(d, at, tids)
			sm.StackSource = d.Format
			rec.Samples = append(rec.Samples, sm)
		}
	}
	if len(rec.Samples) == 0 {
		return rec, fmt.Errorf("%s: no goroutine in the dumps", joinPaths(paths))
	}
	rec.Target.Cmdline = fmt.Sprintf("(%s)", joinPaths(paths))
	rec.Requested = len(rec.Samples)
	if len(formats) > 0 && rec.StackSource == model.FormatNone {
		rec.StackSource = formats[0]
	}
	for i := range rec.Samples {
		rec.Samples[i].PID = rec.Target.PID
	}
	rec.Sources = sampler.ReadSources(rec.Samples, sampler.ReadLocalSource)
	return rec, nil
}

// addGoDumps adds the goroutine dumps in b as snapshots, a second apart
// from when the file was saved, like Python dumps.
func addGoDumps(rec *model.Recording, path string, b []byte, saved time.Time) error {
	dumps, err := goroutines.Parse(bytes.NewReader(b))
	if errors.Is(err, goroutines.ErrNoDump) {
		return fmt.Errorf("%s: no stack dump found: hangdoc analyze reads Go goroutine dumps (SIGQUIT, panic, go test timeout, pprof goroutine?debug=2, runtime.Stack) and Python dumps (py-spy text or JSON, faulthandler, sys._current_frames())", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if rec.Target.Runtime == model.RuntimePython {
		return fmt.Errorf("%s: a Go goroutine dump after Python dumps: analyze one program's dumps at a time", path)
	}
	rec.Target.Runtime = model.RuntimeGo
	read := 0
	for _, d := range dumps {
		if d.Aggregated {
			rec.Notes = append(rec.Notes, fmt.Sprintf("%s: a pprof goroutine?debug=1 profile, which counts stacks without goroutine ids or states: skipped; fetch goroutine?debug=2 instead", path))
			continue
		}
		if d.Truncated {
			rec.Notes = append(rec.Notes, fmt.Sprintf("%s: the goroutine dump is truncated; it was read as far as it goes", path))
		}
		read++
		rec.StackSource = d.Producer
		at := saved.Add(time.Duration(len(rec.Samples)) * time.Second)
		gs := goroutines.Samples(d.Goroutines)
		rec.Samples = append(rec.Samples, model.Sample{Time: at.UTC(), Threads: []model.Thread{}, Goroutines: gs, StackSource: d.Producer, Message: d.Message})
	}
	if read == 0 {
		return fmt.Errorf("%s: only pprof goroutine?debug=1 profiles, which count stacks without ids or states: fetch /debug/pprof/goroutine?debug=2 instead", path)
	}
	return nil
}

// snapshot turns one dump into a sample. Threads are matched across dumps
// by their OS thread id, else their Python ident, else their name; a
// thread with no OS id is given a small stand-in TID, the same in every
// snapshot.
func snapshot(d python.Dump, at time.Time, tids map[string]int) model.Sample {
	s := model.Sample{Time: at.UTC(), Threads: []model.Thread{}}
	for n, t := range d.Threads {
		key := "name:" + t.Name
		switch {
		case t.NativeID > 0:
			key = "tid:" + strconv.Itoa(t.NativeID)
		case t.Ident > 0:
			key = "ident:" + strconv.FormatUint(t.Ident, 16)
		case t.Name == "":
			key = "index:" + strconv.Itoa(n)
		}
		tid, ok := tids[key]
		if !ok {
			tid = t.NativeID
			if tid == 0 {
				tid = len(tids) + 1
			}
			tids[key] = tid
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("thread-%d", tid)
		}
		s.Threads = append(s.Threads, model.Thread{
			TID: tid, Name: name, Stack: t.Frames, Vars: t.Vars,
			Syscall: model.Syscall{Unknown: true, Nr: -1},
			Python:  &model.PythonThread{ThreadName: t.Name, OwnsGIL: t.OwnsGIL, Active: t.Active},
		})
	}
	return s
}

// readInput reads a dump and says when it was saved (now, for stdin).
func readInput(path string, stdin io.Reader) ([]byte, time.Time, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("reading standard input: %w", err)
		}
		return b, time.Now(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading the dump: %w", err)
	}
	saved := time.Now()
	if fi, err := os.Stat(path); err == nil {
		saved = fi.ModTime()
	}
	return b, saved, nil
}

func joinPaths(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprintf("%s … %s, %d files", paths[0], paths[len(paths)-1], len(paths))
}
