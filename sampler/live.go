package sampler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/syscalls"
	"github.com/hangdoc/hangdoc/model"
)

// Sampler takes samples of one live process. It keeps every thread's /proc
// files open between samples: re-reading an open file costs about a quarter
// of opening it, and a hung service may have thousands of threads.
type Sampler struct {
	fs    FS
	pid   int
	arch  string
	start uint64

	stat    procFile // /proc/PID/stat
	taskDir int      // /proc/PID/task, -1 when it could not be opened
	mem     int      // /proc/PID/mem, -1 when it cannot be read
	memErr  error
	threads map[int]*task
	kept    int  // descriptors held open
	budget  int  // how many may be held open
	keepAll bool // the budget holds every thread's files
	buf     []byte
	names   []string
	// mounts are where the cgroup v2 hierarchy and the v1 cpu controller
	// are mounted, read once.
	mounts *[2]cgroupMount
	// fifos are the holders found for each FIFO an open waits on, by
	// device and inode: looked for once.
	fifos map[[2]uint64]fifoHolders
	// eventfds are the holders found for each eventfd a read waits on, by
	// eventfd-id: looked for once.
	eventfds map[uint64]fifoHolders
	// mappers are the processes found mapping each shared object a futex
	// word lies in, by device and inode: looked for once.
	mappers map[string]fifoHolders
	// maps is the target's maps as the current sample read them.
	maps sampleMaps
}

// task is the open files of one thread and what they said last time.
type task struct {
	stat, status, wchan, syscall, schedstat procFile

	// sched is the schedstat line read at the start of the last sample and
	// last what that sample read, nil unless it read every file: see thread.
	sched []byte
	last  *model.Thread
	// call is the last call the thread was read blocked in, other than
	// restart_syscall: what a call resumed after a stop was.
	call model.Syscall
	// nstid is its id in its own PID namespace where that differs (see
	// model.Thread.NSTID), read with the first status; nsRead says it was.
	nstid  int
	nsRead bool
}

// procFile is a /proc file read through a descriptor kept open when the
// budget allows, or opened for each read when it does not.
type procFile struct {
	dir  int // path is relative to dir: AT_FDCWD or Sampler.taskDir
	path string
	fd   int // -1: not open
}

// New checks that pid can be sampled and opens its files. The errors wrap
// ErrNoProcess, ErrKernelThread, ErrZombie or ErrPermission.
func New(fs FS, pid int) (_ *Sampler, err error) {
	s := &Sampler{
		fs:      fs,
		pid:     pid,
		arch:    syscalls.HostArch(),
		mem:     -1,
		taskDir: -1,
		threads: make(map[int]*task),
		buf:     make([]byte, 4096),
		budget:  fdBudget(),
	}
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	s.stat = s.file(fs.pidPath(pid, "stat"))
	// Once read, the stat descriptor is kept open: every failure below
	// must release it.
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	b, err := s.read(&s.stat, true)
	if err != nil {
		return nil, classifyErr("reading", s.stat.path, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.stat.path, err)
	}
	switch {
	case st.Flags&pfKthread != 0:
		return nil, fmt.Errorf("pid %d (%s): %w", pid, st.Comm, ErrKernelThread)
	case st.State == model.StateZombie:
		return nil, fmt.Errorf("pid %d (%s): %w", pid, st.Comm, ErrZombie)
	case st.State == model.StateDead:
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	s.start = st.StartTicks

	// The syscall file needs the same access as ptrace: if it cannot be read
	// nothing hangdoc says would be worth much.
	path := fs.pidPath(pid, "syscall")
	if _, err := readFile(path, s.buf); err != nil {
		return nil, classifyErr("reading", path, err)
	}
	if fd, err := open(fs.pidPath(pid, "mem")); err != nil {
		s.memErr = classifyErr("opening", fs.pidPath(pid, "mem"), err)
	} else {
		s.mem = fd
	}
	// Thread files are opened relative to the task directory: a path of
	// two names instead of five costs a quarter less to open.
	if fd, err := unix.Open(fs.pidPath(pid, "task"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		s.taskDir = fd
	}
	s.budget = fdBudget()
	return s, nil
}

// MemErr says why futex owners cannot be read, or nil.
func (s *Sampler) MemErr() error { return s.memErr }

// Close releases every descriptor. The target is never touched.
func (s *Sampler) Close() error {
	s.close(&s.stat)
	for tid, t := range s.threads {
		s.closeTask(t)
		delete(s.threads, tid)
	}
	if s.mem >= 0 {
		unix.Close(s.mem)
		s.mem = -1
		s.memErr = errors.New("sampler closed")
	}
	if s.taskDir >= 0 {
		unix.Close(s.taskDir)
		s.taskDir = -1
	}
	return nil
}

// Sample takes one sample. It returns an error wrapping ErrNoProcess when the
// process has exited and ErrPIDReused when its pid now names another process.
func (s *Sampler) Sample() (model.Sample, error) {
	now := time.Now()
	s.maps = sampleMaps{}
	b, err := s.read(&s.stat, true)
	if err != nil {
		return model.Sample{}, classifyErr("reading", s.stat.path, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return model.Sample{}, fmt.Errorf("reading %s: %w", s.stat.path, err)
	}
	if st.StartTicks != s.start {
		return model.Sample{}, fmt.Errorf("pid %d: %w", s.pid, ErrPIDReused)
	}
	if st.State == model.StateZombie || st.State == model.StateDead {
		return model.Sample{}, fmt.Errorf("pid %d exited: %w", s.pid, ErrNoProcess)
	}
	sample := model.Sample{
		Time:       now,
		PID:        s.pid,
		StartTicks: st.StartTicks,
		State:      st.State,
		RSSBytes:   st.RSSPages * int64(os.Getpagesize()),
	}

	tids, err := s.listTasks()
	if err != nil {
		return model.Sample{}, err
	}
	sample.Threads = make([]model.Thread, 0, len(tids))
	s.keepAll = s.budget >= filesPerThread*len(tids)+1
	listed := make(map[int]bool, len(tids))
	for _, tid := range tids {
		listed[tid] = true
		sample.Threads = append(sample.Threads, s.thread(tid))
	}
	for tid, t := range s.threads {
		if !listed[tid] {
			s.closeTask(t)
			delete(s.threads, tid)
		}
	}
	s.readFutexes(&sample)
	s.readSharedFutexes(&sample)
	s.resolveFDs(&sample)
	s.readPolled(&sample)
	s.readAnonWaits(&sample)
	s.readEpollPolled(&sample)
	s.readSysV(&sample)
	s.readFileLocks(&sample)
	s.readPaths(&sample)
	s.readSleeps(&sample)
	s.readWaitv(&sample)
	s.readLockedFiles(&sample)
	stopped := st.State.Stopped()
	for _, th := range sample.Threads {
		stopped = stopped || th.State.Stopped()
	}
	if stopped {
		sample.Stop = s.readStop(st)
	}
	s.foreign(&sample)
	sample.Cgroup = s.readCgroup()
	sample.Machine = readMachine(s.fs)
	return sample, nil
}

func (s *Sampler) listTasks() ([]int, error) {
	path := s.fs.pidPath(s.pid, "task")
	d, err := os.Open(path)
	if err != nil {
		return nil, classifyErr("listing", path, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, classifyErr("listing", path, err)
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

// thread reads one thread's files. A thread that vanished is data: Exited.
//
// A thread that has not been on a CPU since the last sample cannot have
// changed its switch counts, wchan or syscall, so status, wchan and syscall
// are re-read only for threads that moved: a hung process is mostly threads
// asleep where they were, and status alone costs twice what stat does.
// schedstat (CPU time in ns, run-queue wait, times scheduled in) is read
// first, so that an unchanged line also covers the reads that followed it
// last time; stat is read every time, because a wakeup changes the state of
// a thread before it runs.
func (s *Sampler) thread(tid int) model.Thread {
	t := s.threads[tid]
	if t == nil {
		t = &task{
			stat:      s.taskFile(tid, "stat"),
			status:    s.taskFile(tid, "status"),
			wchan:     s.taskFile(tid, "wchan"),
			syscall:   s.taskFile(tid, "syscall"),
			schedstat: s.taskFile(tid, "schedstat"),
		}
		s.threads[tid] = t
	}
	th := model.Thread{TID: tid, NSTID: t.nstid}
	gone := func() model.Thread {
		s.closeTask(t)
		delete(s.threads, tid)
		return model.Thread{TID: tid, Exited: true}
	}

	// Without schedstat (no CONFIG_SCHED_INFO, or "0 0 0" when it is off)
	// every file is read; whether the thread is gone is for stat to say.
	var runDelay time.Duration
	b, err := s.read(&t.schedstat, true)
	still := err == nil && t.last != nil && bytes.Equal(b, t.sched) && !bytes.HasPrefix(b, []byte("0 0 0"))
	if err == nil {
		_, runDelay, _ = parseSchedstat(b)
		t.sched = append(t.sched[:0], b...)
	} else {
		t.sched = t.sched[:0]
	}

	if b, err = s.read(&t.stat, true); err != nil {
		return gone()
	}
	st, err := parseStat(b)
	if err != nil {
		return gone()
	}
	th.Name, th.State, th.CPUTime = st.Comm, st.State, st.CPUTime
	if still && (st.State == model.StateSleeping || st.State == model.StateDisk) && st.State == t.last.State {
		th.Voluntary, th.Involuntary = t.last.Voluntary, t.last.Involuntary
		th.Wchan, th.Syscall, th.KernelStack = t.last.Wchan, t.last.Syscall, t.last.KernelStack
		return th
	}
	t.last = nil

	if b, err = s.read(&t.status, false); err != nil {
		if s.vanished(tid, err) {
			return gone()
		}
	} else {
		th.Voluntary, th.Involuntary, _ = parseCtxtSwitches(b)
		if !t.nsRead {
			t.nstid, t.nsRead = innerPID(parseNSpid(b), tid), true
			th.NSTID = t.nstid
		}
	}
	if th.State == model.StateRunning {
		// On a CPU or waiting for one: wchan and syscall say nothing
		// ("0", "running"), and schedstat says how long it waited.
		th.Syscall = model.Syscall{Running: true, Nr: -1}
		th.RunDelay = runDelay
		return th
	}
	if b, err = s.read(&t.wchan, false); err == nil {
		th.Wchan = parseWchan(b)
	} else if s.vanished(tid, err) {
		return gone()
	}
	if th.State == model.StateDisk {
		th.KernelStack = s.kernelStack(tid)
	}
	th.Syscall = model.Syscall{Unknown: true, Nr: -1}
	if b, err = s.read(&t.syscall, false); err == nil {
		if sc, err := parseSyscall(b); err == nil {
			th.Syscall = sc
			if sc.Nr >= 0 {
				th.Syscall.Name = syscalls.Name(s.arch, sc.Nr)
			}
			if th.Syscall.Name == "restart_syscall" {
				th.Syscall = resumedCall(s.arch, th.Syscall, t.call, th.Wchan)
			} else if th.Syscall.InCall() {
				t.call = th.Syscall
			}
		}
	} else if s.vanished(tid, err) {
		return gone()
	}
	if len(t.sched) > 0 {
		last := th
		t.last = &last
	}
	return th
}

// vanished reports whether a read error means the thread has exited: ESRCH
// through a descriptor kept open, or ENOENT with the thread's directory
// gone. A file missing from a directory that is still there is one this
// kernel does not provide (schedstat needs CONFIG_SCHED_INFO, wchan
// CONFIG_KALLSYMS), not an exit.
func (s *Sampler) vanished(tid int, err error) bool {
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if !errors.Is(err, syscall.ENOENT) {
		return false
	}
	var st unix.Stat_t
	return unix.Stat(s.fs.taskPath(s.pid, tid), &st) != nil
}

func (s *Sampler) file(path string) procFile {
	return procFile{dir: unix.AT_FDCWD, path: path, fd: -1}
}

// taskFile is a file of thread tid, relative to the task directory.
func (s *Sampler) taskFile(tid int, name string) procFile {
	if s.taskDir < 0 {
		return s.file(s.fs.taskPath(s.pid, tid, name))
	}
	return procFile{dir: s.taskDir, path: strconv.Itoa(tid) + "/" + name, fd: -1}
}

// read reads f, opening it first if needed and keeping it open if the
// descriptor budget allows. When the budget cannot hold every thread's
// files, it goes to the files read every sample (always): the others are
// read only for threads that moved.
func (s *Sampler) read(f *procFile, always bool) ([]byte, error) {
	if f.fd < 0 {
		fd, err := openat(f.dir, f.path)
		if err != nil {
			return nil, err
		}
		if s.kept >= s.budget || !always && !s.keepAll {
			defer unix.Close(fd)
		} else {
			f.fd = fd
			s.kept++
		}
		b, err := pread(fd, s.buf)
		s.buf = b[:cap(b)]
		return b, err
	}
	b, err := pread(f.fd, s.buf)
	s.buf = b[:cap(b)]
	return b, err
}

func (s *Sampler) close(f *procFile) {
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
		s.kept--
	}
}

func (s *Sampler) closeTask(t *task) {
	s.close(&t.stat)
	s.close(&t.status)
	s.close(&t.wchan)
	s.close(&t.syscall)
	s.close(&t.schedstat)
}

// readFutexes reads, once per address, the words a mutex keeps at the futex
// address: the lock word, __owner at +8 and __kind at +16.
func (s *Sampler) readFutexes(sample *model.Sample) {
	for _, th := range sample.Threads {
		addr, ok := model.FutexWait(th.Syscall)
		if !ok {
			continue
		}
		key := model.FutexKey(addr)
		if _, seen := sample.Futexes[key]; seen {
			continue
		}
		if sample.Futexes == nil {
			sample.Futexes = make(map[string]model.Futex)
		}
		var f model.Futex
		if s.mem < 0 {
			f.Err = s.memErr.Error()
		} else {
			var w [20]byte
			if n, err := unix.Pread(s.mem, w[:], int64(addr)); err != nil {
				f.Err = fmt.Sprintf("reading %d bytes at %s: %v", len(w), key, err)
			} else if n != len(w) {
				f.Err = fmt.Sprintf("reading %d bytes at %s: only %d readable", len(w), key, n)
			} else {
				f.Word, f.Owner, f.Kind = le32(w[0:]), le32(w[8:]), le32(w[16:])
			}
		}
		sample.Futexes[key] = f
	}
}

// le32 decodes an int32 in the target's byte order; amd64 and arm64 Linux
// are both little-endian.
func le32(b []byte) int32 {
	return int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

// resolveFDs names what each blocked call's descriptor points at.
func (s *Sampler) resolveFDs(sample *model.Sample) {
	var seen map[int]string
	var watches map[int][]string
	for i := range sample.Threads {
		th := &sample.Threads[i]
		fd, ok := model.FDArg(th.Syscall)
		if !ok || fd < 0 {
			continue
		}
		target, done := seen[fd]
		if !done {
			target = s.readlinkFD(fd)
			if seen == nil {
				seen = make(map[int]string)
			}
			seen[fd] = target
		}
		th.FD = target
		switch target {
		case "anon_inode:[pidfd]":
			if info, err := ReadFDInfo(s.fs, s.pid, fd); err == nil {
				th.PidfdPID = info.PidfdPID
			}
		case "anon_inode:[eventpoll]":
			w, done := watches[fd]
			if !done {
				w = s.epollWatches(fd)
				if watches == nil {
					watches = make(map[int][]string)
				}
				watches[fd] = w
			}
			th.Watches = w
		}
	}
}

func (s *Sampler) readlinkFD(fd int) string {
	target, _ := os.Readlink(s.fs.pidPath(s.pid, "fd", strconv.Itoa(fd)))
	return target
}

// maxWatches bounds how many of an epoll's descriptors a sample names.
const maxWatches = 16

// epollWatches names the descriptors an epoll instance watches, from its
// fdinfo: "3 socket:[123]".
func (s *Sampler) epollWatches(epfd int) []string {
	info, err := ReadFDInfo(s.fs, s.pid, epfd)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range info.EpollTargets {
		if len(out) == maxWatches {
			out = append(out, fmt.Sprintf("… %d more", len(info.EpollTargets)-maxWatches))
			break
		}
		out = append(out, fmt.Sprintf("%d %s", t.FD, s.readlinkFD(t.FD)))
	}
	return out
}

// kernelStack reads the kernel functions a thread sleeps in, innermost
// first, without offsets; root only, and only worth it for a thread in
// uninterruptible sleep, which nothing in user space will move.
func (s *Sampler) kernelStack(tid int) []string {
	b, err := readFile(s.fs.taskPath(s.pid, tid, "stack"), s.buf)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		fn, _, _ := strings.Cut(f[len(f)-1], "+")
		out = append(out, fn)
	}
	return out
}

// fdReserve is how many descriptors a sampler leaves for everything else
// hangdoc opens: a few files, pipes and sockets, never thousands.
const fdReserve = 256

// fdBudget is how many /proc descriptors a sampler may keep open: the soft
// limit less fdReserve.
func fdBudget() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return max(0, int(min(r.Cur, 1<<30))-fdReserve)
}

// filesPerThread is how many files a sampler may keep open for a thread.
const filesPerThread = 5
