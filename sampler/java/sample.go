package java

import (
	"strconv"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// Snapshots turns the dumps of one JVM into samples, oldest first: a
// thread without a Linux tid (a JSON dump's, a deadlock excerpt's) gets a
// stand-in TID, the same in every snapshot.
type Snapshots struct {
	tids map[string]int
	used map[int]bool
	next int // the lowest stand-in that may be free
}

// Sample turns one dump into a sample taken at at (the dump's own
// timestamp when it has one). A thread dump has no kernel evidence: each
// thread's state is unknown, its syscall unread; its CPU time is in Java
// (cpu=), never in CPUTime.
func (s *Snapshots) Sample(d Dump, at time.Time) model.Sample {
	if s.tids == nil {
		s.tids, s.used = map[string]int{}, map[int]bool{}
	}
	for _, t := range d.Threads {
		if t.NID > 0 {
			s.used[t.NID] = true
		}
	}
	if !d.Time.IsZero() {
		at = d.Time
	}
	sm := model.Sample{Time: at.UTC(), PID: d.PID, Threads: make([]model.Thread, 0, len(d.Threads)), StackSource: d.Format, Excerpt: d.Excerpt}
	byName := map[string]int{}
	for _, t := range d.Threads {
		tid := t.NID
		if tid == 0 {
			tid = s.standIn(t)
		}
		if _, ok := byName[t.Name]; !ok {
			byName[t.Name] = tid
		}
		jt := &model.JavaThread{Number: t.Number, Daemon: t.Daemon, State: t.State, Status: t.Status, Virtual: t.Virtual,
			NoNID: t.NID == 0, OwnableRead: t.OwnableRead, BlockerOwner: t.BlockerOwner}
		if t.CPUKnown {
			ms := t.CPUMillis
			jt.CPUMillis = &ms
		}
		for _, l := range t.Locks {
			jt.Locks = append(jt.Locks, model.JavaLock{Frame: l.Frame, Kind: l.Kind.String(), JavaObject: model.JavaObject(l.Object)})
		}
		for _, o := range t.Ownable {
			jt.Ownable = append(jt.Ownable, model.JavaObject(o))
		}
		frames := t.Frames
		if frames == nil {
			frames = []model.Frame{}
		}
		sm.Threads = append(sm.Threads, model.Thread{TID: tid, Name: t.Name, Stack: frames, Java: jt,
			Syscall: model.Syscall{Unknown: true, Nr: -1}})
	}
	for _, dl := range d.Deadlocks {
		var out model.JavaDeadlock
		for _, l := range dl.Links {
			out.Links = append(out.Links, model.JavaDeadlockLink{TID: byName[l.Thread], HeldBy: byName[l.HeldBy], Ownable: l.Ownable, JavaObject: model.JavaObject(l.Object)})
		}
		sm.JavaDeadlocks = append(sm.JavaDeadlocks, out)
	}
	return sm
}

// standIn is the TID of a thread the dump gives no Linux tid: its Java
// thread number when no other thread uses it, else the next free number.
func (s *Snapshots) standIn(t Thread) int {
	key := "name:" + t.Name
	if t.Number > 0 {
		key = "number:" + strconv.FormatInt(t.Number, 10)
	}
	if tid, ok := s.tids[key]; ok {
		return tid
	}
	tid := int(t.Number)
	if tid <= 0 || tid > 1<<30 || s.used[tid] {
		s.next = max(s.next, 1)
		for s.used[s.next] {
			s.next++
		}
		tid = s.next
	}
	s.used[tid] = true
	s.tids[key] = tid
	return tid
}

// Merge joins a dump of a live JVM to a sample of its threads read from
// /proc at about the same time: each thread the dump gives a Linux tid
// (nid) gets its stack and its Java facts, and the sample the dump's
// deadlock reports. Threads the dump has no tid for (virtual threads, a
// JSON dump) are not joined. It returns how many threads were joined.
func Merge(s *model.Sample, d Dump) int {
	var tmp Snapshots
	dumped := tmp.Sample(d, s.Time)
	byTID := make(map[int]int, len(s.Threads))
	for i, t := range s.Threads {
		byTID[t.TID] = i
	}
	n := 0
	for _, t := range dumped.Threads {
		i, ok := byTID[t.TID]
		if !ok || t.Java.NoNID {
			continue
		}
		s.Threads[i].Java = t.Java
		if len(s.Threads[i].Stack) == 0 {
			s.Threads[i].Stack = t.Stack
		}
		n++
	}
	s.JavaDeadlocks = append(s.JavaDeadlocks, dumped.JavaDeadlocks...)
	if s.StackSource == model.FormatNone {
		s.StackSource = d.Format
	}
	return n
}

// MergeVirtual adds a dump's virtual threads to a sample of a live JVM:
// they are no OS threads, so /proc has none of them, and the text dump
// does not print them (JDK 21+'s JSON dump does). Each gets a stand-in
// TID that no thread of the sample has (its Java thread number where
// free), its stack and Java facts, and no kernel evidence. It returns how
// many were added.
func MergeVirtual(s *model.Sample, d Dump) int {
	var virt Dump
	virt.Format, virt.PID = d.Format, d.PID
	for _, t := range d.Threads {
		if t.Virtual && t.NID == 0 {
			virt.Threads = append(virt.Threads, t)
		}
	}
	if len(virt.Threads) == 0 {
		return 0
	}
	tmp := Snapshots{tids: map[string]int{}, used: map[int]bool{}}
	for _, t := range s.Threads {
		tmp.used[t.TID] = true
	}
	added := tmp.Sample(virt, s.Time)
	s.Threads = append(s.Threads, added.Threads...)
	return len(added.Threads)
}
