package outdir

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS writes out to disk everything written to the file system that
// holds dir, the files just written below it among it: one syncfs(2)
// instead of an fsync per file. A variable for the tests.
var syncFS = syncFileSystem

func syncFileSystem(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
