package java

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// jsonStart is where a JSON thread dump begins in b (after blank space),
// or -1 when b does not hold one.
func jsonStart(b []byte) int {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return -1
	}
	head := t[:min(len(t), 4096)]
	if !bytes.Contains(head, []byte(`"threadDump"`)) {
		return -1
	}
	return len(b) - len(t)
}

// The JSON thread dump of JDK 21+ (jdk.internal.vm.ThreadDumper). Numbers
// are strings in it; the lock fields came with JDK 24/25.
type jsonDump struct {
	ThreadDump struct {
		ProcessID        string          `json:"processId"`
		Time             string          `json:"time"`
		RuntimeVersion   string          `json:"runtimeVersion"`
		ThreadContainers []jsonContainer `json:"threadContainers"`
	} `json:"threadDump"`
}

type jsonContainer struct {
	Container string       `json:"container"`
	Threads   []jsonThread `json:"threads"`
}

type jsonThread struct {
	TID         string   `json:"tid"`
	Name        string   `json:"name"`
	State       string   `json:"state"`
	Virtual     bool     `json:"virtual"`
	Carrier     string   `json:"carrier"`
	Stack       []string `json:"stack"`
	ParkBlocker *struct {
		Object string          `json:"object"`
		Owner  json.RawMessage `json:"owner"`
	} `json:"parkBlocker"`
	BlockedOn     string `json:"blockedOn"`
	WaitingOn     string `json:"waitingOn"`
	MonitorsOwned []struct {
		Depth json.RawMessage `json:"depth"`
		Locks []string        `json:"locks"`
	} `json:"monitorsOwned"`
}

func parseJSON(b []byte) (Dump, error) {
	var jd jsonDump
	if err := json.Unmarshal(b, &jd); err != nil {
		return Dump{}, fmt.Errorf("parsing JVM JSON thread dump: %w", err)
	}
	td := jd.ThreadDump
	d := Dump{Format: model.FormatJavaJSON, VM: td.RuntimeVersion, JNIGlobalRefs: -1}
	d.PID, _ = strconv.Atoi(td.ProcessID)
	if t, err := time.Parse(time.RFC3339Nano, td.Time); err == nil {
		d.Time = t
	}
	for _, c := range td.ThreadContainers {
		for _, jt := range c.Threads {
			d.Threads = append(d.Threads, jt.thread())
		}
	}
	if len(d.Threads) == 0 {
		return Dump{}, fmt.Errorf("parsing JVM JSON thread dump: %w: no thread in it", ErrNoDump)
	}
	return d, nil
}

// jsonNumber reads a number the dump may print as a string or not.
func jsonNumber(raw json.RawMessage) int64 {
	s := strings.Trim(string(raw), `"`)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func (jt jsonThread) thread() Thread {
	t := Thread{Name: jt.Name, Virtual: jt.Virtual, State: jt.State}
	t.Number, _ = strconv.ParseInt(jt.TID, 10, 64)
	for _, s := range jt.Stack {
		// "java.base/java.lang.Object.wait0(Native Method)": the module first.
		if i := strings.IndexByte(s, '/'); i >= 0 && i < strings.IndexByte(s+"(", '(') {
			s = s[i+1:]
		}
		t.Frames = append(t.Frames, parseFrame(s))
	}
	if pb := jt.ParkBlocker; pb != nil {
		t.Locks = append(t.Locks, LockLine{Kind: Parking, Object: identity(pb.Object)})
		if len(pb.Owner) > 0 {
			t.BlockerOwner = jsonNumber(pb.Owner)
		}
	}
	if jt.BlockedOn != "" {
		t.Locks = append(t.Locks, LockLine{Kind: WaitingToLock, Object: identity(jt.BlockedOn)})
	}
	if jt.WaitingOn != "" {
		t.Locks = append(t.Locks, LockLine{Kind: WaitingOn, Object: identity(jt.WaitingOn)})
	}
	for _, m := range jt.MonitorsOwned {
		depth := int(jsonNumber(m.Depth))
		for _, l := range m.Locks {
			t.Locks = append(t.Locks, LockLine{Frame: max(depth, 0), Kind: Locked, Object: identity(l)})
		}
	}
	return t
}

// identity reads "java.lang.Object@1b6d3586": the class and the whole
// string as the object's name (an identity hash, not an address).
func identity(s string) Object {
	o := Object{Addr: s}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		o.Class = s[:i]
	}
	return o
}
