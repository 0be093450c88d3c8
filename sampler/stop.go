package sampler

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// readStop reads what the kernel says of a stopped process: its tracer,
// whether it is a background job of its terminal, and the signals queued
// for it. The status file says no more; which signal stopped it is for
// classify to infer.
func (s *Sampler) readStop(st stat) *model.Stop {
	stop := &model.Stop{Background: st.TTY != 0 && st.TPGID > 0 && st.TPGID != st.PGRP}
	b, err := readFile(s.fs.pidPath(s.pid, "status"), nil)
	if err != nil {
		return stop
	}
	if v, ok := statusText(b, "TracerPid:"); ok {
		stop.TracerPID, _ = strconv.Atoi(v)
		stop.ByHangdoc = stop.TracerPID == os.Getpid()
	}
	var pending uint64
	for _, key := range []string{"SigPnd:", "ShdPnd:"} {
		if v, ok := statusText(b, key); ok {
			m, _ := strconv.ParseUint(v, 16, 64)
			pending |= m
		}
	}
	for sig := 1; sig <= 64; sig++ {
		if pending&(1<<(sig-1)) != 0 {
			stop.Pending = append(stop.Pending, signalName(sig))
		}
	}
	return stop
}

// statusText is the value of one "Key:\tvalue" line of a status file.
func statusText(b []byte, key string) (string, bool) {
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
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
