// Package version holds the build stamp that goreleaser writes with -ldflags -X.
package version

// Set at link time: -X github.com/hangdoc/hangdoc/internal/version.Version=v1.2.3
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)
