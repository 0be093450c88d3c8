package java

import "testing"

func TestCatchesSignal(t *testing.T) {
	for _, tc := range []struct {
		status string
		sig    int
		want   bool
	}{
		{"Name:\tjava\nSigCgt:\t0000000000000004\n", 3, true}, // SIGQUIT's bit
		{"Name:\tjava\nSigCgt:\t0000000181005ccf\n", 3, true},
		{"Name:\tjava\nSigCgt:\t0000000181005cc8\n", 3, false}, // -Xrs: no SIGQUIT
		{"Name:\tjava\nSigCgt:\tzz\n", 3, false},
		{"Name:\tjava\n", 3, false},
		{"Name:\tjava\nSigCgt:\t0000000000000004\n", 0, false},
	} {
		if got := CatchesSignal([]byte(tc.status), tc.sig); got != tc.want {
			t.Errorf("CatchesSignal(%q, %d) = %v, want %v", tc.status, tc.sig, got, tc.want)
		}
	}
}

func TestAttachDisabledIn(t *testing.T) {
	for _, tc := range []struct {
		cmdline, environ string
		want             bool
	}{
		{"java\x00-XX:+DisableAttachMechanism\x00-cp\x00x\x00Main\x00", "", true},
		{"java\x00-cp\x00x\x00Main\x00", "HOME=/root\x00JAVA_TOOL_OPTIONS=-Xmx1g -XX:+DisableAttachMechanism\x00", true},
		{"java\x00-cp\x00x\x00Main\x00", "_JAVA_OPTIONS=-XX:+DisableAttachMechanism\x00", true},
		{"java\x00-XX:-DisableAttachMechanism\x00Main\x00", "", false},
		{"java\x00Main\x00--flag=-XX:+DisableAttachMechanismX\x00", "OTHER=-XX:+DisableAttachMechanism\x00", false},
	} {
		if got := AttachDisabledIn([]byte(tc.cmdline), []byte(tc.environ)); got != tc.want {
			t.Errorf("AttachDisabledIn(%q, %q) = %v, want %v", tc.cmdline, tc.environ, got, tc.want)
		}
	}
}
