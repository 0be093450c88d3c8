package sampler

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/procstatus"
	"github.com/hangdoc/hangdoc/model"
)

// readStop reads what the kernel says of a stopped process: its tracer,
// whether it is a background job of its terminal, and the signals queued
// for it. The status file says no more; which signal stopped it is for
// classify to infer.
func (s *Sampler) readStop(st stat) *model.Stop {
	stop := &model.Stop{Background: st.TTY != 0 && st.TPGID > 0 && st.TPGID != st.PGRP}
	status, err := ReadStatus(s.fs, s.pid)
	if err != nil {
		return stop
	}
	if status.Has&procstatus.HasTracerPid != 0 {
		stop.TracerPID = status.TracerPid
		stop.ByHangdoc = stop.TracerPID == os.Getpid()
	}
	pending := status.SigPnd | status.ShdPnd
	for sig := 1; sig <= 64; sig++ {
		if pending&(1<<(sig-1)) != 0 {
			stop.Pending = append(stop.Pending, signalName(sig))
		}
	}
	return stop
}

// statusText is the value of one "Key:\tvalue" line of a status file.
// ReadStatus reads and parses /proc/PID/status: every reader of it in
// the sampler, and its stack sources, goes through here.
func ReadStatus(fs FS, pid int) (procstatus.Status, error) {
	b, err := readFile(fs.pidPath(pid, "status"), make([]byte, 4096))
	if err != nil {
		return procstatus.Status{}, classifyErr("reading", fs.pidPath(pid, "status"), err)
	}
	return procstatus.Parse(b)
}

// signalName names a signal by its number: "SIGTERM", "SIGRT3".
func signalName(sig int) string {
	if sig >= 34 {
		return "SIGRT" + strconv.Itoa(sig-34)
	}
	if n := unix.SignalName(unix.Signal(sig)); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(sig)
}
