package testvictim

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/helper"
)

// JDKs are the JDKs the Java victims run on where they are installed (CI
// installs both).
var JDKs = []string{"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"}

// BuildJava compiles the Java victims named (testdata/victims/java/NAME.java,
// with Victim.java, their ready line) with jdk's javac, and returns the
// directory of their classes, readable by every user.
func BuildJava(t testing.TB, jdk string, names ...string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "testdata", "victims", "java")
	classes := t.TempDir()
	args := []string{"-d", classes, filepath.Join(src, "Victim.java")}
	for _, n := range names {
		args = append(args, filepath.Join(src, n+".java"))
	}
	JavaTool(t, 3*time.Minute, filepath.Join(jdk, "bin", "javac"), args...)
	return classes
}

// JavaTool runs a JDK tool bounded, as hangdoc runs its helpers
// (helper.Run: stdin from /dev/null, its own process group, killed whole
// at the deadline), and returns its stdout.
func JavaTool(t testing.TB, limit time.Duration, path string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // all of it, for a compiler's errors
	out, err := helper.Run(context.Background(), limit, cmd, 256<<20)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(path), args, err, stderr.String())
	}
	return out
}
