// Package replay is the offline side of the sampler: it plays a recording
// back as a sampler.System — the best test double, and what hangdoc
// analyze rests on — and reads saved stack dumps into a recording.
package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

// System plays rec back: the target's and the peers' samples in order, the
// family as it was at the first and the last scan, the resources as they
// were found. A process it has no more samples of has exited.
func System(rec model.Recording) sampler.System {
	s := &system{rec: rec, samples: map[int][]model.Sample{}, cmdlines: map[int]string{}, errs: map[int]string{}, nspids: map[int]int{}}
	if len(rec.Samples) > 0 {
		s.samples[rec.Samples[0].PID] = rec.Samples
	}
	if rec.Target.PID != 0 {
		s.samples[rec.Target.PID] = rec.Samples
	}
	for _, p := range rec.Peers {
		s.samples[p.PID] = p.Samples
		s.cmdlines[p.PID] = p.Cmdline
		s.errs[p.PID] = p.Err
		s.nspids[p.PID] = p.NSPID
	}
	return s
}

type system struct {
	rec      model.Recording
	samples  map[int][]model.Sample
	cmdlines map[int]string
	errs     map[int]string
	nspids   map[int]int
	scans    int
}

func (s *system) Open(pid int) (sampler.Process, error) {
	samples, ok := s.samples[pid]
	if !ok || len(samples) == 0 {
		if e := s.errs[pid]; e != "" {
			return nil, fmt.Errorf("pid %d: %s", pid, e)
		}
		return nil, fmt.Errorf("pid %d: %w", pid, sampler.ErrNoProcess)
	}
	return &process{pid: pid, samples: samples}, nil
}

func (s *system) Describe(pid int) model.Target {
	if pid == s.rec.Target.PID || s.rec.Target.PID == 0 {
		return s.rec.Target
	}
	return model.Target{PID: pid, NSPID: s.nspids[pid], Cmdline: s.cmdlines[pid]}
}

func (s *system) Cmdline(pid int) string { return s.cmdlines[pid] }

// Procs gives the family as it was at the first scan, then as it was at
// the last.
func (s *system) Procs() ([]model.Proc, error) {
	s.scans++
	if s.scans == 1 && s.rec.FamilyBefore != nil {
		return s.rec.FamilyBefore, nil
	}
	return s.rec.Family, nil
}

func (s *system) Holders(targets map[string]bool, order []int, budget time.Duration) (map[string][]model.FDRef, int, bool) {
	found := map[string][]model.FDRef{}
	for name := range targets {
		if r, ok := s.rec.Resources[name]; ok && len(r.Holders) > 0 {
			found[name] = r.Holders
		}
	}
	return found, s.rec.Search.Scanned, true
}

func (s *system) TCP(pid int) ([]model.TCPConn, error) {
	var out []model.TCPConn
	for _, r := range s.rec.Resources {
		if r.TCP != nil {
			out = append(out, *r.TCP)
		}
	}
	return out, nil
}

// Unix gives what the recording found of a Unix socket and its peer.
func (s *system) Unix(pid int, ino uint64, connecting string) (model.UnixSock, *model.UnixSock, bool) {
	r, ok := s.rec.Resources[fmt.Sprintf("socket:[%d]", ino)]
	if !ok || r.Unix == nil {
		return model.UnixSock{}, nil, false
	}
	if p := s.rec.Resources[r.Peer].Unix; p != nil {
		c := *p
		return *r.Unix, &c, true
	}
	return *r.Unix, nil, true
}

func (s *system) PipeFill(pid, fd int) (model.PipeFill, error) {
	for _, r := range s.rec.Resources {
		for _, h := range r.Holders {
			if h.PID == pid && h.FD == fd && r.Pipe != nil {
				return *r.Pipe, nil
			}
		}
	}
	return model.PipeFill{}, sampler.ErrNotPipe
}

func (s *system) BootTime() (time.Time, error) {
	if s.rec.BootTime.IsZero() {
		return time.Time{}, fmt.Errorf("no boot time in the recording")
	}
	return s.rec.BootTime, nil
}

func (s *system) Host() model.Host { return s.rec.Host }

// process plays back one process's samples.
type process struct {
	pid     int
	samples []model.Sample
	next    int
}

func (p *process) Sample() (model.Sample, error) {
	if p.next >= len(p.samples) {
		return model.Sample{}, fmt.Errorf("pid %d exited: %w", p.pid, sampler.ErrNoProcess)
	}
	s := p.samples[p.next]
	p.next++
	// What the stack sources added is theirs to add again.
	s.Goroutines, s.Paused, s.Frozen, s.StackSource = nil, false, 0, model.FormatNone
	threads := make([]model.Thread, len(s.Threads))
	for i, t := range s.Threads {
		t.Stack, t.Python = nil, nil
		threads[i] = t
	}
	s.Threads = threads
	return s, nil
}

func (p *process) MemErr() error { return nil }
func (p *process) Close() error  { return nil }

// Marshal is a recording as Write saves it.
func Marshal(rec model.Recording) ([]byte, error) {
	rec.Version = model.RecordingVersion
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write saves a run's raw evidence as JSON.
func Write(path string, rec model.Recording) error {
	b, err := Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the recording: %w", err)
	}
	return nil
}

// Read loads a recording written by Write.
func Read(path string) (model.Recording, error) {
	var rec model.Recording
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("reading recording %s: %w", path, err)
	}
	return rec, nil
}

// Stacks plays back the stacks a recording's samples carried, as the
// source that gave them: a recording replayed through sampler.Record comes
// out with the same stacks.
func Stacks(rec model.Recording) sampler.Stacks {
	if rec.StackSource == model.FormatNone {
		return sampler.Stacks{}
	}
	return sampler.Stacks{What: "stacks", Sources: []sampler.StackSource{&recorded{rec: rec}}}
}

type recorded struct {
	rec  model.Recording
	next int
}

func (r *recorded) Name() model.Format { return r.rec.StackSource }

func (r *recorded) Stacks(_ context.Context, s *model.Sample) error {
	if r.next >= len(r.rec.Samples) {
		return fmt.Errorf("no more recorded stacks")
	}
	was := r.rec.Samples[r.next]
	r.next++
	s.Goroutines, s.Paused, s.Frozen = was.Goroutines, was.Paused, was.Frozen
	for i := range s.Threads {
		for _, t := range was.Threads {
			if t.TID == s.Threads[i].TID {
				s.Threads[i].Stack, s.Threads[i].Python = t.Stack, t.Python
			}
		}
	}
	return nil
}
