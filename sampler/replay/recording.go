package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hangdoc/hangdoc/model"
)

// maxRecordingBytes bounds a recording read back: decoded and classified,
// it takes about six times its size in memory (docs/recording.md: 10,000
// goroutines, three samples, record 24 MB and analyze in 136 MiB).
var maxRecordingBytes int64 = 256 << 20

// isRecording tells a --record file by its start: a JSON object whose
// first keys are the recording's version or hangdoc's.
func isRecording(head []byte) bool {
	b := bytes.TrimLeft(head, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return bytes.HasPrefix(b, []byte(`"recording_version"`)) || bytes.HasPrefix(b, []byte(`"hangdoc_version"`))
}

// recording reads a --record file as the whole of what is analyzed: the
// same evidence the live run classified, so the same report.
func (r *dumpReader) recording(path string, in io.Reader) error {
	if r.replayed || len(r.rec.Samples) > 0 {
		return fmt.Errorf("%s: a recording is analyzed alone, not with dumps or other recordings", name(path))
	}
	lr := &io.LimitedReader{R: in, N: maxRecordingBytes + 1}
	var rec model.Recording
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&rec); err != nil {
		switch {
		case lr.N <= 0:
			return fmt.Errorf("%s: a recording over %d MiB is not read (hangdoc's own memory is bounded)", name(path), maxRecordingBytes>>20)
		case errors.Is(err, errTimedOut) || r.ctx.Err() != nil:
			return fmt.Errorf("%s: the recording was not read whole before %s", name(path), r.stopped())
		}
		return fmt.Errorf("%s: not a readable hangdoc recording: %v", name(path), err)
	}
	if rec.Version > model.RecordingVersion {
		return fmt.Errorf("%s: a recording of version %d, newer than this hangdoc reads (%d): upgrade hangdoc", name(path), rec.Version, model.RecordingVersion)
	}
	if len(rec.Samples) == 0 {
		return fmt.Errorf("%s: a recording with no samples", name(path))
	}
	r.rec, r.replayed = rec, true
	return nil
}
