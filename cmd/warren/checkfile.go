package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"
)

// checkFlag is --check of the commands that write one file (docs,
// asyncapi): compare instead of writing, as generate --check does for a
// package.
func checkFlag() cli.Flag {
	return &cli.BoolFlag{Name: "check", Usage: "write nothing; exit 1 if --out FILE is missing or stale"}
}

// writeOrCheck writes data to the --out file (or standard output), or with
// --check compares it with that file and reports, as generate --check does,
// a file that is missing apart from one that is stale. fix is the command
// that brings the file up to date.
func writeOrCheck(c *cli.Context, data []byte, fix string) error {
	path := c.String("out")
	if !c.Bool("check") {
		return writeOutput(c, path, data)
	}
	if path == "" || path == "-" {
		return usageError(c, "--check compares with a file: expected --out FILE")
	}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(c.App.ErrWriter, "%s: missing; run %s\n", path, fix)
		return errReported
	case err != nil:
		return fmt.Errorf("check %s: %w", path, err)
	case !bytes.Equal(old, data):
		fmt.Fprintf(c.App.ErrWriter, "%s: stale, differs from what would be generated; run %s\n", path, fix)
		return errReported
	}
	return nil
}
