package outdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFresh: a new directory's files, written from several goroutines,
// are all there once Commit returns, in a directory with the permissions
// one made for it would have had, and nothing else is left beside it.
func TestFresh(t *testing.T) {
	for _, syncs := range []bool{true, false} {
		t.Run(fmt.Sprintf("syncfs=%v", syncs), func(t *testing.T) {
			if !syncs {
				defer func(f func(string, int64) error) { syncFS = f }(syncFS)
				syncFS = func(string, int64) error { return errors.ErrUnsupported }
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			w, err := NewFresh(dir)
			if err != nil || w == nil {
				t.Fatalf("NewFresh: %v, %v", w, err)
			}
			files := map[string][]byte{"xtest/kit.go": []byte("kit\n")}
			for i := range 40 {
				files[fmt.Sprintf("f%d.go", i)] = []byte(fmt.Sprint(i))
			}
			var wg sync.WaitGroup
			for name, content := range files {
				wg.Go(func() {
					if err := w.Write(name, content); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists before Commit: %v", dir, err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			for name, want := range files {
				got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
				if err != nil || string(got) != string(want) {
					t.Errorf("%s: %q, %v; want %q", name, got, err, want)
				}
			}
			entries, _ := os.ReadDir(filepath.Dir(dir))
			if len(entries) != 1 {
				t.Errorf("temporary directory left behind: %v", entries)
			}
			other := filepath.Join(parent, "other")
			if err := os.Mkdir(other, 0o755); err != nil {
				t.Fatal(err)
			}
			got, _ := os.Stat(dir)
			want, _ := os.Stat(other)
			if got.Mode() != want.Mode() {
				t.Errorf("output directory's mode %v, want %v", got.Mode(), want.Mode())
			}
		})
	}
}

// TestFreshExisting: an existing directory is not fresh, nor one whose
// parent is missing; Plan writes them. Nothing is created.
func TestFreshExisting(t *testing.T) {
	parent := t.TempDir()
	for _, dir := range []string{parent, filepath.Join(parent, "a", "b")} {
		if w, err := NewFresh(dir); w != nil || err != nil {
			t.Errorf("NewFresh(%s): %v, %v; want nil, nil", dir, w, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("created: %v", entries)
	}
}

// TestFreshAbort: after Abort nothing is left, and a name that is not a
// plain file name is refused.
func TestFreshAbort(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	w, err := NewFresh(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write("x.go", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("../y.go", []byte("y")); err == nil {
		t.Error("Write of ../y.go: no error")
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestFreshWriteError: a file the writer cannot write (here, a name
// written twice) fails Commit with the file's name, and leaves nothing
// behind; a Write after Commit is an error, not a panic.
func TestFreshWriteError(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	w, err := NewFresh(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.Write("x.go", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	err = w.Commit()
	if err == nil || !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), "x.go") {
		t.Fatalf("Commit: %v; want the error of writing x.go twice", err)
	}
	if err := w.Write("y.go", []byte("y")); err == nil {
		t.Error("Write after Commit: no error")
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
