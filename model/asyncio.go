package model

import "strings"

// AsyncioSocketCall is one of asyncio's coroutines in which a task waits on
// a socket: the memory reader reads the socket's descriptor through its
// variable V (a stream's transport's _sock_fd, or the socket object's
// own), and classify says what the task waits for (Op).
type AsyncioSocketCall struct {
	File, Func string // the end of its file's path, its qualified name
	Op         string // "read", "write", "accept", "connect"
	V          string // the variable that leads to the socket
	Transport  bool   // V is a stream (or its protocol) with a transport
}

// AsyncioSocketCalls are the coroutines a task waits on a socket in.
var AsyncioSocketCalls = []AsyncioSocketCall{
	{"asyncio/streams.py", "StreamReader._wait_for_data", "read", "self", true},
	{"asyncio/streams.py", "FlowControlMixin._drain_helper", "write", "self", true},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_recv", "read", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_recv_into", "read", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_recvfrom", "read", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_recvfrom_into", "read", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_sendall", "write", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_sendto", "write", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_accept", "accept", "sock", false},
	{"asyncio/selector_events.py", "BaseSelectorEventLoop.sock_connect", "connect", "sock", false},
}

// SocketCallOf is the socket call a frame of file and fn is; nil for none.
func SocketCallOf(file, fn string) *AsyncioSocketCall {
	for i := range AsyncioSocketCalls {
		if c := &AsyncioSocketCalls[i]; fn == c.Func && strings.HasSuffix(file, c.File) {
			return c
		}
	}
	return nil
}

// RunsAsyncioLoop reports a stack that runs an asyncio event loop: a frame
// of BaseEventLoop._run_once. Its thread waits for the loop's tasks'
// descriptors in its selector, and it alone runs their code.
func RunsAsyncioLoop(stack []Frame) bool {
	for _, f := range stack {
		if strings.HasSuffix(f.Func, "_run_once") && strings.HasSuffix(f.File, "asyncio/base_events.py") {
			return true
		}
	}
	return false
}

// VarOf is the address of the object that frame's variable name names
// ("0x7f…"); "" when it was not read.
func VarOf(vars []FrameVars, frame int, name string) string {
	for _, fv := range vars {
		if fv.Frame != frame {
			continue
		}
		for _, v := range fv.Vars {
			if v.Name == name {
				return v.Addr
			}
		}
	}
	return ""
}
