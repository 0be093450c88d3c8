package sampler

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBootTimeLines(t *testing.T) {
	for _, tc := range []struct {
		name, stat string // stat "" means no file
		want       time.Time
		wantErr    string
		wantIs     error
	}{
		{"after cpu lines", "cpu  1 2 3\ncpu0 1 2 3\nintr 0\nbtime 1796013788\nprocesses 9\n", time.Unix(1796013788, 0), "", nil},
		{"the first line", "btime 1796013788\n", time.Unix(1796013788, 0), "", nil},
		{"no newline at the end", "cpu 1\nbtime 1796013788", time.Unix(1796013788, 0), "", nil},
		{"a longer key is not btime", "cpu 1\nbtimex 5\n", time.Time{}, "no btime line", nil},
		{"garbled", "cpu 1\nbtime x\n", time.Time{}, "btime: strconv.ParseInt", nil},
		{"no file", "", time.Time{}, "stat: no such file or directory", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.stat != "" {
				if err := os.WriteFile(filepath.Join(root, "stat"), []byte(tc.stat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := BootTime(NewFS(root))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) ||
					!strings.Contains(err.Error(), filepath.Join(root, "stat")) {
					t.Errorf("BootTime(%q) = %v, %v; want an error naming the file and containing %q", tc.stat, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("BootTime(%q) = %v, %v; want %v", tc.stat, got, err, tc.want)
			}
		})
	}
}
