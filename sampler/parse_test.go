package sampler

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

// Lines from the pipeholder fixture in testdata/proc/32266: the main thread,
// which burned 20 ticks of user and 20 of system time before main (see
// testdata/burncpu.c), and worker-2, the thread blocked in write().
const (
	statMain   = "32266 (pipeholder) S 1 32250 7923 0 -1 4194304 416 0 0 0 20 20 0 0 20 0 9 0 92769 70746112 630 18446744073709551615 94278724558848 94278724562489 140721610343568 0 0 0 0 65542 0 1 0 0 17 1 0 0 0 0 0 94278724570576 94278724571428 94279414136832 140721610344885 140721610344910 140721610344910 140721610346463 0\n"
	statHolder = "32279 (worker-2) S 1 32250 7923 0 -1 4194368 3 0 0 0 0 0 0 0 20 0 9 0 92809 70746112 630 18446744073709551615 94278724558848 94278724562489 140721610343568 0 0 0 0 65542 0 1 0 0 -1 1 0 0 0 0 0 94278724570576 94278724571428 94279414136832 140721610344885 140721610344910 140721610344910 140721610346463 0\n"
	// kthreadd: flags 0x208040 include PF_KTHREAD (0x00200000).
	statKthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 3 0 0 20 0 1 0 5 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
)

// mainStat is what statMain says.
var mainStat = stat{
	PID: 32266, Comm: "pipeholder", State: model.StateSleeping, PPID: 1, PGRP: 32250, Session: 7923, TPGID: -1,
	Flags: 4194304, CPUTime: 400 * time.Millisecond, NumThreads: 9, StartTicks: 92769, RSSPages: 630,
}

// withField returns the stat line with field n (numbered as in proc(5): 3 is
// the state, the first field after the comm) replaced by v.
func withField(line string, n int, v string) string {
	end := strings.LastIndexByte(line, ')')
	f := strings.Fields(line[end+1:])
	f[n-3] = v
	return line[:end+1] + " " + strings.Join(f, " ") + "\n"
}

// withComm returns the stat line with the command name replaced by comm.
func withComm(line, comm string) string {
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	return line[:open+1] + comm + line[end:]
}

// firstFields returns the stat line cut after n fields following the comm.
func firstFields(line string, n int) string {
	end := strings.LastIndexByte(line, ')')
	f := strings.Fields(line[end+1:])
	return line[:end+1] + " " + strings.Join(f[:n], " ")
}

type statCase struct {
	name    string
	in      string
	want    stat
	wantErr string // a substring of the error; "" means success
	errIs   error
}

var statCases = []statCase{
	{name: "normal", in: statMain, want: mainStat},
	{
		name: "worker thread",
		in:   statHolder,
		want: stat{
			PID: 32279, Comm: "worker-2", State: model.StateSleeping, PPID: 1, PGRP: 32250, Session: 7923, TPGID: -1,
			Flags: 4194368, NumThreads: 9, StartTicks: 92809, RSSPages: 630,
		},
	},
	{
		name: "comm with spaces and parentheses",
		in:   withComm(statMain, "a (b) c"),
		want: func() stat { s := mainStat; s.Comm = "a (b) c"; return s }(),
	},
	{
		name: "comm that looks like fields",
		in:   withComm(statMain, "x) Z 7 7 7 (y"),
		want: func() stat { s := mainStat; s.Comm = "x) Z 7 7 7 (y"; return s }(),
	},
	{
		name: "comm with a newline",
		in:   withComm(statMain, "a\nb"),
		want: func() stat { s := mainStat; s.Comm = "a\nb"; return s }(),
	},
	{
		name: "empty comm",
		in:   withComm(statMain, ""),
		want: func() stat { s := mainStat; s.Comm = ""; return s }(),
	},
	{
		name: "kernel thread",
		in:   statKthread,
		want: stat{
			PID: 2, Comm: "kthreadd", State: model.StateSleeping, Flags: 0x208040, TPGID: -1,
			CPUTime: 30 * time.Millisecond, NumThreads: 1, StartTicks: 5,
		},
	},
	{
		name: "zombie",
		in:   withField(statMain, 3, "Z"),
		want: func() stat { s := mainStat; s.State = model.StateZombie; return s }(),
	},
	{
		name: "no trailing newline",
		in:   strings.TrimSuffix(statMain, "\n"),
		want: mainStat,
	},
	{
		name: "exactly the fields used",
		in:   firstFields(statMain, 22),
		want: mainStat,
	},
	{
		name: "CPU time from ticks at 100 Hz",
		in:   withField(withField(statMain, 14, "150"), 15, "51"),
		want: func() stat { s := mainStat; s.CPUTime = 2010 * time.Millisecond; return s }(),
	},
	{
		// 10^10 ticks is 3.2 years of CPU: a busy 128-core process gets
		// there in 9 days. Ticks times time.Second overflows int64 long
		// before: the conversion must be ticks times 10ms.
		name: "CPU time of years",
		in:   withField(statMain, 14, "10000000000"),
		want: func() stat { s := mainStat; s.CPUTime = 1e8*time.Second + 200*time.Millisecond; return s }(),
	},

	{name: "empty", in: "", wantErr: "no (comm)"},
	{name: "pid only", in: "4187\n", wantErr: "no (comm)"},
	{name: "no closing parenthesis", in: "4187 (pipeholder S 1 32250 7923\n", wantErr: "no (comm)"},
	{name: "closing before opening", in: "4187 )x( S 1 32250 7923\n", wantErr: "no (comm)"},
	{name: "cut after comm", in: "4187 (pipeholder)", wantErr: "too few fields", errIs: errShort},
	{name: "cut after a few fields", in: firstFields(statMain, 5), wantErr: "too few fields", errIs: errShort},
	{name: "one field short", in: firstFields(statMain, 21), wantErr: "too few fields", errIs: errShort},
	{name: "pid not a number", in: "pid (pipeholder)" + statMain[len("32266 (pipeholder)"):], wantErr: "pid"},
	{name: "no pid", in: statMain[len("32266 "):], wantErr: "pid"},
	{name: "ppid not a number", in: withField(statMain, 4, "one"), wantErr: "field 4"},
	{name: "flags in hex", in: withField(statMain, 9, "0x400000"), wantErr: "field 9"},
	{name: "utime with a unit", in: withField(statMain, 14, "20s"), wantErr: "field 14"},
	{name: "stime fractional", in: withField(statMain, 15, "2.5"), wantErr: "field 15"},
	{name: "num_threads not a number", in: withField(statMain, 20, "nine"), wantErr: "field 20"},
	{name: "starttime not a number", in: withField(statMain, 22, "later"), wantErr: "field 22"},
	{name: "rss not a number", in: withField(statMain, 24, "-"), wantErr: "field 24"},
	// The kernel prints utime and stime unsigned: a sign is garbage, not a
	// negative CPU time.
	{name: "negative utime", in: withField(statMain, 14, "-20"), wantErr: "field 14"},
}

func TestParseStat(t *testing.T) {
	for _, tc := range statCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseStat(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Errorf("parseStat(%q) error %v is not %v", tc.in, err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseStat(%q): %v", tc.in, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parseStat(%q) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func TestParseStatKernelThreadFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{statKthread, true},
		{statMain, false},
		{withField(statMain, 9, "2097152"), true}, // PF_KTHREAD alone
	} {
		s, err := parseStat([]byte(tc.in))
		if err != nil {
			t.Fatalf("parseStat(%q): %v", tc.in, err)
		}
		if got := s.Flags&pfKthread != 0; got != tc.want {
			t.Errorf("parseStat(%q): flags %#x, kernel thread = %v, want %v", tc.in, s.Flags, got, tc.want)
		}
	}
}

// statusSelf is /proc/self/status of a bash shell, captured verbatim.
const statusSelf = `Name:	bash
Umask:	0022
State:	S (sleeping)
Tgid:	7923
Ngid:	0
Pid:	7923
PPid:	7922
TracerPid:	0
Uid:	0	0	0	0
Gid:	0	0	0	0
FDSize:	256
Groups:	 
NStgid:	7923
NSpid:	7923
NSpgid:	7923
NSsid:	7923
Kthread:	0
VmPeak:	    5136 kB
VmSize:	    5136 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	    4060 kB
VmRSS:	    4060 kB
RssAnon:	    1008 kB
RssFile:	    3052 kB
RssShmem:	       0 kB
VmData:	    1080 kB
VmStk:	     132 kB
VmExe:	     772 kB
VmLib:	    1596 kB
VmPTE:	      40 kB
VmSwap:	       0 kB
HugetlbPages:	       0 kB
CoreDumping:	0
THP_enabled:	1
untag_mask:	0xffffffffffffffff
Threads:	1
SigQ:	0/96365
SigPnd:	0000000000000000
ShdPnd:	0000000000000000
SigBlk:	0000000000010000
SigIgn:	0000000000000004
SigCgt:	0000000043817efb
CapInh:	0000000000000000
CapPrm:	000001fffeffffff
CapEff:	000001fffeffffff
CapBnd:	000001fffeffffff
CapAmb:	0000000000000000
NoNewPrivs:	0
Seccomp:	0
Seccomp_filters:	0
Speculation_Store_Bypass:	vulnerable
SpeculationIndirectBranch:	always enabled
Cpus_allowed:	3
Cpus_allowed_list:	0-1
Mems_allowed:	00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000001
Mems_allowed_list:	0
voluntary_ctxt_switches:	140
nonvoluntary_ctxt_switches:	15
`

type ctxtCase struct {
	name             string
	in               string
	wantVol, wantInv uint64
	wantErr          string
}

var ctxtCases = []ctxtCase{
	{name: "captured /proc/self/status", in: statusSelf, wantVol: 140, wantInv: 15},
	{
		name:    "no trailing newline",
		in:      "Name:\tx\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t7",
		wantVol: 5, wantInv: 7,
	},
	{
		name:    "spaces instead of a tab",
		in:      "Name:\tx\nvoluntary_ctxt_switches:   5  \nnonvoluntary_ctxt_switches: 7\n",
		wantVol: 5, wantInv: 7,
	},
	{
		name:    "nonvoluntary first",
		in:      "Name:\tx\nnonvoluntary_ctxt_switches:\t7\nvoluntary_ctxt_switches:\t5\n",
		wantVol: 5, wantInv: 7,
	},
	{
		name:    "largest counts",
		in:      "Name:\tx\nvoluntary_ctxt_switches:\t18446744073709551615\nnonvoluntary_ctxt_switches:\t0\n",
		wantVol: 1<<64 - 1, wantInv: 0,
	},
	{name: "empty", in: "", wantErr: "no voluntary_ctxt_switches"},
	{name: "no counters", in: "Name:\tx\nState:\tS (sleeping)\n", wantErr: "no voluntary_ctxt_switches"},
	{
		// "nonvoluntary_ctxt_switches:" ends with the voluntary key: it must
		// not be read as the voluntary count.
		name:    "missing voluntary",
		in:      "Name:\tx\nnonvoluntary_ctxt_switches:\t7\n",
		wantErr: "no voluntary_ctxt_switches",
	},
	{name: "missing nonvoluntary", in: "Name:\tx\nvoluntary_ctxt_switches:\t5\n", wantErr: "no nonvoluntary_ctxt_switches"},
	{name: "voluntary not a number", in: "Name:\tx\nvoluntary_ctxt_switches:\tmany\nnonvoluntary_ctxt_switches:\t7\n", wantErr: "voluntary_ctxt_switches"},
	{name: "nonvoluntary negative", in: "Name:\tx\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t-7\n", wantErr: "nonvoluntary_ctxt_switches"},
	{name: "voluntary empty", in: "Name:\tx\nvoluntary_ctxt_switches:\nnonvoluntary_ctxt_switches:\t7\n", wantErr: "voluntary_ctxt_switches"},
	{name: "voluntary overflows", in: "Name:\tx\nvoluntary_ctxt_switches:\t18446744073709551616\nnonvoluntary_ctxt_switches:\t7\n", wantErr: "voluntary_ctxt_switches"},
}

func TestParseCtxtSwitches(t *testing.T) {
	for _, tc := range ctxtCases {
		t.Run(tc.name, func(t *testing.T) {
			vol, inv, err := parseCtxtSwitches([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseCtxtSwitches(%q) = %d, %d, %v; want an error containing %q", tc.in, vol, inv, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCtxtSwitches(%q): %v", tc.in, err)
			}
			if vol != tc.wantVol || inv != tc.wantInv {
				t.Errorf("parseCtxtSwitches(%q) = %d, %d; want %d, %d", tc.in, vol, inv, tc.wantVol, tc.wantInv)
			}
		})
	}
}

type syscallCase struct {
	name    string
	in      string
	want    model.Syscall
	wantErr string
}

var syscallCases = []syscallCase{
	{name: "running", in: "running\n", want: model.Syscall{Running: true, Nr: -1}},
	{name: "running without newline", in: "running", want: model.Syscall{Running: true, Nr: -1}},
	{name: "blocked outside a syscall", in: "-1 0x7ffd 0x7f12\n", want: model.Syscall{Nr: -1, SP: 0x7ffd, PC: 0x7f12}},
	{
		name: "futex wait",
		in:   "202 0x55bef9e35160 0x80 0x2 0x0 0x0 0x0 0x7f9f7d3acc78 0x7f9f7d43712b\n",
		want: model.Syscall{Nr: 202, Args: [6]uint64{0x55bef9e35160, 0x80, 2}, SP: 0x7f9f7d3acc78, PC: 0x7f9f7d43712b},
	},
	{
		name: "write",
		in:   "1 0x4 0x7f9f7c3aacb0 0x200 0x0 0x0 0x0 0x7f9f7c3aac70 0x7f9f7d4a938f\n",
		want: model.Syscall{Nr: 1, Args: [6]uint64{4, 0x7f9f7c3aacb0, 0x200}, SP: 0x7f9f7c3aac70, PC: 0x7f9f7d4a938f},
	},
	{
		name: "read, syscall 0",
		in:   "0 0x0 0x7ffc 0x1 0x0 0x0 0x0 0x7ffd 0x7f12",
		want: model.Syscall{Nr: 0, Args: [6]uint64{0, 0x7ffc, 1}, SP: 0x7ffd, PC: 0x7f12},
	},
	{
		name: "largest arguments",
		in:   "7 0xffffffffffffffff 0xFFFFFFFFFFFFFFFF 0x0 0x0 0x0 0x0 0x0 0x0",
		want: model.Syscall{Nr: 7, Args: [6]uint64{1<<64 - 1, 1<<64 - 1}},
	},

	{name: "empty", in: "", wantErr: "empty"},
	{name: "blank", in: " \n", wantErr: "empty"},
	{name: "running capitalised", in: "Running\n", wantErr: "number"},
	{name: "number not a number", in: "futex 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", wantErr: "number"},
	{name: "number below -1", in: "-2 0x7ffd 0x7f12", wantErr: "number"},
	{name: "-1 alone", in: "-1\n", wantErr: "fields after -1"},
	{name: "-1 with one address", in: "-1 0x7ffd\n", wantErr: "fields after -1"},
	{name: "-1 with arguments", in: "-1 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n", wantErr: "fields after -1"},
	{name: "number alone", in: "202\n", wantErr: "too few fields"},
	{name: "three fields", in: "202 0x7ffd 0x7f12\n", wantErr: "too few fields"},
	{name: "eight fields", in: "202 0x1 0x80 0x2 0x0 0x0 0x0 0x7ffd\n", wantErr: "too few fields"},
	{name: "ten fields", in: "202 0x1 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f12 0x0\n", wantErr: "too many fields"},
	{name: "bad hex", in: "202 0xzz 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f12\n", wantErr: "argument"},
	{name: "decimal argument", in: "202 12 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f12\n", wantErr: "argument"},
	{name: "bare 0x", in: "202 0x1 0x 0x2 0x0 0x0 0x0 0x7ffd 0x7f12\n", wantErr: "argument"},
	{name: "signed hex", in: "202 0x1 0x80 0x-2 0x0 0x0 0x0 0x7ffd 0x7f12\n", wantErr: "argument"},
	{name: "argument overflows", in: "202 0x1 0x80 0x2 0x0 0x0 0x10000000000000000 0x7ffd 0x7f12\n", wantErr: "argument"},
}

func TestParseSyscall(t *testing.T) {
	for _, tc := range syscallCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSyscall([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSyscall(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				if d := cmp.Diff(model.Syscall{}, got); d != "" {
					t.Errorf("parseSyscall(%q) failed but returned a value (-zero +got):\n%s", tc.in, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseSyscall(%q): %v", tc.in, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parseSyscall(%q) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

type schedstatCase struct {
	name      string
	in        string
	run, wait time.Duration
	wantErr   string
}

var schedstatCases = []schedstatCase{
	{name: "normal", in: "2030745 138929 21\n", run: 2030745, wait: 138929},
	{name: "schedstats off", in: "0 0 1\n", run: 0, wait: 0},
	{name: "no newline", in: "5 6 7", run: 5, wait: 6},
	{name: "largest", in: "9223372036854775807 0 1\n", run: 1<<63 - 1},
	{name: "empty", in: "", wantErr: "too few fields"},
	{name: "two fields", in: "5 6\n", wantErr: "too few fields"},
	{name: "four fields", in: "5 6 7 8\n", wantErr: "too many fields"},
	{name: "run not a number", in: "five 6 7\n", wantErr: "parsing schedstat"},
	{name: "negative wait", in: "5 -6 7\n", wantErr: "parsing schedstat"},
	{name: "run overflows a Duration", in: "9223372036854775808 6 7\n", wantErr: "parsing schedstat"},
}

func TestParseSchedstat(t *testing.T) {
	for _, tc := range schedstatCases {
		t.Run(tc.name, func(t *testing.T) {
			run, wait, err := parseSchedstat([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSchedstat(%q) = %v, %v, %v; want an error containing %q", tc.in, run, wait, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseSchedstat(%q): %v", tc.in, err)
			}
			if run != tc.run || wait != tc.wait {
				t.Errorf("parseSchedstat(%q) = %v, %v; want %v, %v", tc.in, run, wait, tc.run, tc.wait)
			}
		})
	}
}

func TestParseWchan(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"zero", "0", ""},
		{"zero with newline", " 0\n", ""},
		{"empty", "", ""},
		{"blank", "\n", ""},
		{"futex", "futex_do_wait", "futex_do_wait"},
		{"pipe write with newline", "anon_pipe_write\n", "anon_pipe_write"},
		{"zero prefix is a name", "0x0", "0x0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseWchan([]byte(tc.in)); got != tc.want {
				t.Errorf("parseWchan(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestParseSelf runs the parsers on this test's own /proc files: the formats
// of the running kernel, not only the captured ones.
func TestParseSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatalf("no /proc: %v", err)
	}
	s, err := parseStat(b)
	if err != nil {
		t.Fatalf("parseStat(%q): %v", b, err)
	}
	if s.PID != os.Getpid() || s.PPID != os.Getppid() || s.NumThreads < 1 || s.StartTicks == 0 {
		t.Errorf("parseStat(%q) = %+v; want pid %d, ppid %d, threads and a start time", b, s, os.Getpid(), os.Getppid())
	}
	if s.Flags&pfKthread != 0 {
		t.Errorf("parseStat(%q): flags %#x mark this test as a kernel thread", b, s.Flags)
	}

	b, err = os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseCtxtSwitches(b); err != nil {
		t.Errorf("parseCtxtSwitches(%q): %v", b, err)
	}

	b, err = os.ReadFile("/proc/thread-self/syscall")
	if err != nil {
		t.Fatalf("no syscall file: %v", err)
	}
	sc, err := parseSyscall(b)
	if err != nil {
		t.Fatalf("parseSyscall(%q): %v", b, err)
	}
	// The thread is reading its own file: it is on a CPU, in read().
	if !sc.Running && sc.Nr != 0 {
		t.Errorf("parseSyscall(%q) = %+v; want running or read", b, sc)
	}
}

// TestTimesScheduled: the third field of a thread's schedstat; nothing
// when schedstat is off ("0 0 0") or the file is missing or garbled.
func TestTimesScheduled(t *testing.T) {
	root := t.TempDir()
	write := func(tid, text string) {
		dir := filepath.Join(root, "7", "task", tid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("8", "1234 56 78\n")
	write("9", "0 0 0\n")
	write("10", "1 2\n")
	fs := NewFS(root)
	for _, tc := range []struct {
		tid  int
		n    uint64
		okay bool
	}{{8, 78, true}, {9, 0, false}, {10, 0, false}, {11, 0, false}} {
		if n, ok := TimesScheduled(fs, 7, tc.tid); n != tc.n || ok != tc.okay {
			t.Errorf("tid %d: %d, %v; want %d, %v", tc.tid, n, ok, tc.n, tc.okay)
		}
	}
}
