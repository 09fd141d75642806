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
// costs. One goroutine of its own creates them, one after another: the
// kernel creates files in one directory one at a time, and two creating
// at once spent a core spinning on the directory's lock that the
// generation could use (a ninth of the CPU of a thousand facts where
// creating a file was slow, after many recent deletions). The promise is
// Apply's: the files go into a temporary directory beside dir and are all
// on disk before Commit renames it to be dir, in one rename; until then,
// and if Abort is called instead, dir does not exist.
type Fresh struct {
	dir, tmp string

	queue chan freshFile
	done  chan struct{} // closed when the writer has written or refused all of queue

	// sending is held (read) while a file is queued and (write) to close
	// the queue, so that a Write after Commit or Abort is an error.
	sending sync.RWMutex
	closed  bool

	mu  sync.Mutex
	err error // the writer's first error; it writes nothing after it

	// The writer's own.
	paths   []string // of the files written, below tmp
	written int64    // their bytes
	subdirs map[string]bool
}

// freshFile is one file waiting for Fresh's writer.
type freshFile struct {
	name, sub string // sub: its subdirectory, "" for none
	content   []byte
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
	w := &Fresh{dir: dir, tmp: tmp, subdirs: map[string]bool{},
		queue: make(chan freshFile, 64), done: make(chan struct{})}
	go w.writer()
	return w, nil
}

// Write hands the file name ("file.go", or "sub/file.go" as for NewPlan)
// with content to the writer, and returns the writer's first error so far
// (the file is then not written): Commit reports the rest. It may be
// called from several goroutines at once; after Commit or Abort it is an
// error.
func (w *Fresh) Write(name string, content []byte) error {
	sub, err := subdir(name)
	if err != nil {
		return err
	}
	if err := w.firstErr(); err != nil {
		return err
	}
	w.sending.RLock()
	defer w.sending.RUnlock()
	if w.closed {
		return errors.New("write after the output directory was committed or aborted")
	}
	w.queue <- freshFile{name, sub, content}
	return nil
}

func (w *Fresh) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// writer writes the queued files until the queue is closed; after an
// error it only drains the queue.
func (w *Fresh) writer() {
	defer close(w.done)
	for f := range w.queue {
		if w.firstErr() != nil {
			continue
		}
		if err := w.write(f); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		}
	}
}

func (w *Fresh) write(f freshFile) error {
	if f.sub != "" && !w.subdirs[f.sub] {
		if err := os.Mkdir(filepath.Join(w.tmp, f.sub), 0o755); err != nil {
			return fmt.Errorf("create temporary directory: %w", err)
		}
		w.subdirs[f.sub] = true
	}
	path := filepath.Join(w.tmp, filepath.FromSlash(f.name))
	w.paths = append(w.paths, path)
	w.written += int64(len(f.content))
	return writeFile(path, f.content)
}

// finish closes the queue, once, and waits for the writer to be done with
// it; it returns the writer's first error.
func (w *Fresh) finish() error {
	w.sending.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.sending.Unlock()
	<-w.done
	return w.firstErr()
}

// Commit has every file written on disk and renames the temporary
// directory to be dir. Call it once every Write has returned, and
// succeeded; the Fresh is done with either way.
func (w *Fresh) Commit() error {
	if err := w.finish(); err != nil {
		w.Abort()
		return err
	}
	if syncFS(w.tmp, w.written) != nil {
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
	w.finish()
	if err := os.RemoveAll(w.tmp); err != nil {
		return fmt.Errorf("remove temporary directory: %w", err)
	}
	return nil
}
