package report

import (
	"encoding/json"
	"io"
)

// JSON writes the report as the versioned contract in docs/json.md. It never
// depends on the terminal, and its lists are [] when empty, never null.
func JSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
