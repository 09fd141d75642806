package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Fresh writes the files of an output directory that does not exist yet,
// each as soon as it is generated, while the others are being generated:
// creating a thousand files is much of what generating a thousand facts
// costs, and the kernel creates them one after another in one directory,
// so writing them after the generation left a core idle twice over. The
// promise is Apply's: the files go into a temporary directory beside dir
// and are all on disk before Commit renames it to be dir, in one rename;
// until then, and if Abort is called instead, dir does not exist.
type Fresh struct {
	dir, tmp string

	mu      sync.Mutex
	paths   []string        // of the files written, below tmp
	subdirs map[string]bool // made below tmp
}

// NewFresh starts writing dir, when dir does not exist and its parent
// does; nil otherwise, which Plan handles (it also makes the parents, once
// everything is generated: a failure leaves no directory behind).
func NewFresh(dir string) (*Fresh, error) {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return nil, nil
	}
	tmp, err := mkdirTemp(parent)
	if err != nil {
		return nil, fmt.Errorf("create temporary directory: %w", err)
	}
	return &Fresh{dir: dir, tmp: tmp, subdirs: map[string]bool{}}, nil
}

// Write writes the file name ("file.go", or "sub/file.go" as for
// NewPlan) with content. It may be called from several goroutines at once.
func (w *Fresh) Write(name string, content []byte) error {
	sub, err := subdir(name)
	if err != nil {
		return err
	}
	path := filepath.Join(w.tmp, filepath.FromSlash(name))
	w.mu.Lock()
	if sub != "" && !w.subdirs[sub] {
		if err := os.Mkdir(filepath.Join(w.tmp, sub), 0o755); err != nil {
			w.mu.Unlock()
			return fmt.Errorf("create temporary directory: %w", err)
		}
		w.subdirs[sub] = true
	}
	w.paths = append(w.paths, path)
	w.mu.Unlock()
	return writeFile(path, content)
}

// Commit has every file written on disk and renames the temporary
// directory to be dir. Call it once every Write has returned, and
// succeeded; the Fresh is done with either way.
func (w *Fresh) Commit() error {
	if syncFS(w.tmp) != nil {
		slices.Sort(w.paths) // the first error in the order of the names
		if err := syncEach(w.paths); err != nil {
			w.Abort()
			return err
		}
	}
	if err := os.Rename(w.tmp, w.dir); err != nil {
		w.Abort()
		return fmt.Errorf("move %s into place: %w", w.dir, err)
	}
	return nil
}

// Abort removes what was written; dir is left as it was.
func (w *Fresh) Abort() error {
	if err := os.RemoveAll(w.tmp); err != nil {
		return fmt.Errorf("remove temporary directory: %w", err)
	}
	return nil
}
