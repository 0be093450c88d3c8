package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/internal/version"
)

func newVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hangdoc's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(stdout, "hangdoc %s", version.Version)
			if version.Commit != "" {
				fmt.Fprintf(stdout, " (%s, %s)", version.Commit, version.Date)
			}
			fmt.Fprintf(stdout, " %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
