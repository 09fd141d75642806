package gomod

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PackagePath returns the import path of the Go package in dir: the path
// of the module whose go.mod is in dir or the nearest directory above it,
// followed by dir's place in that module, as the go command would import
// it. dir need not exist yet. It reads go.mod and runs no go command, so
// it costs a generate nothing.
//
// ok is false, with no error, when no go.mod encloses dir (a scratch
// directory, GOPATH mode): the package has no import path to give. A
// go.mod without a module directive is an error.
func PackagePath(dir string) (importPath string, ok bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	for root := abs; ; {
		data, err := os.ReadFile(filepath.Join(root, "go.mod"))
		switch {
		case err == nil:
			mod, err := modulePath(data)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", filepath.Join(root, "go.mod"), err)
			}
			rel, err := filepath.Rel(root, abs)
			if err != nil {
				return "", false, err
			}
			if rel == "." {
				return mod, true, nil
			}
			return mod + "/" + filepath.ToSlash(rel), true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("read go.mod: %w", err)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", false, nil
		}
		root = parent
	}
}

// modulePath returns the path a go.mod's module directive gives: a line
// "module PATH", PATH bare or quoted, perhaps followed by a comment, or
// the one line of a "module (...)" block.
func modulePath(gomod []byte) (string, error) {
	s := bufio.NewScanner(bytes.NewReader(gomod))
	inBlock := false
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "//")
		line = strings.TrimSpace(line)
		if !inBlock {
			rest, ok := strings.CutPrefix(line, "module")
			if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '(' && rest[0] != '"' {
				continue
			}
			line = strings.TrimSpace(rest)
			if line == "(" {
				inBlock = true
				continue
			}
		}
		if line == "" {
			continue
		}
		if line == ")" {
			break
		}
		if line[0] == '"' || line[0] == '`' {
			p, err := strconv.Unquote(line)
			if err != nil {
				return "", fmt.Errorf("module directive: %w", err)
			}
			line = p
		}
		if line == "" {
			break
		}
		return line, nil
	}
	return "", errors.New("no module directive")
}
