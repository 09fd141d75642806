package outdir

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestPendingBytesReadsDirtyAndWriteback(t *testing.T) {
	meminfo := "MemTotal:       24576000 kB\nDirty:            307200 kB\nWriteback:          1024 kB\nWritebackTmp:          7 kB\n"
	got, err := pendingBytes([]byte(meminfo))
	if err != nil || got != (307200+1024)<<10 {
		t.Errorf("pendingBytes = %d, %v; want %d", got, err, (307200+1024)<<10)
	}
	for _, bad := range []string{
		"MemTotal: 1 kB\n",                  // neither line
		"Dirty: 5 kB\n",                     // no Writeback
		"Dirty: 5 MB\nWriteback: 0 kB\n",    // another unit
		"Dirty: many kB\nWriteback: 0 kB\n", // not a number
	} {
		if _, err := pendingBytes([]byte(bad)); err == nil || !strings.Contains(err.Error(), "/proc/meminfo") {
			t.Errorf("pendingBytes(%q) = %v; want an error naming /proc/meminfo", bad, err)
		}
	}
}

// With this machine's unwritten data above what the caller wrote by more
// than othersPendingLimit, syncFileSystem leaves the syncing to the
// caller's fsyncs; below it, it syncs the file system. The machine's own
// unwritten data is whatever it is: the test gives a written figure on
// either side of it.
func TestSyncFileSystemDeclinesWhenOthersWritesArePending(t *testing.T) {
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := pendingBytes(meminfo)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := syncFileSystem(dir, pending+1<<30); err != nil {
		t.Errorf("syncFileSystem with more written than pending: %v", err)
	}
	if err := syncFileSystem(dir, -othersPendingLimit-1<<40); !errors.Is(err, errOthersPending) {
		t.Errorf("syncFileSystem with others' writes pending = %v; want errOthersPending", err)
	}
}
