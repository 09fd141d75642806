package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The floor is a side of its own, generation only: what no generator that
// writes warren's files can skip. It reads every file of the schema
// directory and writes files of the same names, sizes and line counts as
// warren's output, on both cores, and computes nothing. Where warren is
// above it, that is warren's own work; what the floor takes, the machine's
// file system takes from anyone who writes one file per schema file.
//
// writeFloorList generates warren's package of in once, untimed, into ref,
// and writes the list the floor writes from: one line per file, "lines
// size name".
func (r *runner) writeFloorList(n int) (string, error) {
	ref := filepath.Join(r.work, "input", fmt.Sprint(n), "warren-output")
	if err := os.RemoveAll(ref); err != nil {
		return "", err
	}
	if out, err := r.generateCmd("warren", n, ref).CombinedOutput(); err != nil {
		return "", fmt.Errorf("warren generate: %v\n%s", err, out)
	}
	var list strings.Builder
	err := filepath.WalkDir(ref, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(ref, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&list, "%d %d %s\n", bytes.Count(src, []byte{'\n'}), len(src), filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", err
	}
	file := filepath.Join(r.work, "input", fmt.Sprint(n), "floor.list")
	return file, os.WriteFile(file, []byte(list.String()), 0o644)
}

// floorFile is one file the floor writes.
type floorFile struct {
	lines, size int
	name        string
}

// runFloor is the floor's process (gencost -floor LIST SCHEMAS OUT): it
// reads every file below schemas, then writes the listed files below out.
func runFloor(list, schemas, out string) error {
	src, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	var files []floorFile
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			return fmt.Errorf("%s: %q is not \"lines size name\"", list, sc.Text())
		}
		lines, err1 := strconv.Atoi(f[0])
		size, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || lines > size {
			return fmt.Errorf("%s: %q is not \"lines size name\"", list, sc.Text())
		}
		files = append(files, floorFile{lines, size, f[2]})
	}
	read := 0
	err = filepath.WalkDir(schemas, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		read += len(b)
		return err
	})
	if err != nil {
		return err
	}
	if read == 0 {
		return fmt.Errorf("%s: nothing to read", schemas)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < len(files); i += 2 {
				if err := writeFloorFile(out, files[i]); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// writeFloorFile writes f below out: f.size bytes of which f.lines are
// newlines, spread evenly.
func writeFloorFile(out string, f floorFile) error {
	path := filepath.Join(out, filepath.FromSlash(f.name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b := bytes.Repeat([]byte{'x'}, f.size)
	for i := range f.lines {
		b[(i+1)*f.size/(f.lines+1)] = '\n'
	}
	return os.WriteFile(path, b, 0o644)
}
