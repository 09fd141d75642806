// Package gomod resolves the module imports of a warren schema directory
// with the Go toolchain, so that the version read is the one the service's
// go.mod and go.sum pin: `go list -m -json <module>` in the service's
// module, and `go mod download -json <module>@<version>` when the module
// is required but not yet in the module cache. Nothing is fetched any other
// way. It is the one place warren runs the go command for imports; the
// generator only sees a [load.Resolver].
package gomod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// Resolver resolves imports for the schema directory of one service.
type Resolver struct {
	// ModuleDir is a directory inside the service's module (the schema
	// directory will do): the go command runs there, so go.mod is found
	// as it is for go build.
	ModuleDir string
	// Go is the go command; "" looks it up on PATH.
	Go string
	// Env, when not nil, is the environment of the go command (as
	// exec.Cmd.Env); nil inherits warren's.
	Env []string
}

// Module is what the go command says of one module of the build list.
type Module struct {
	Path    string
	Version string
	Dir     string // in the module cache, or the replacement's directory
	Replace *Module
	Error   *struct{ Err string }
}

// Resolve implements [load.Resolver]: a path import relative to from, a
// module import through the go command.
func (r *Resolver) Resolve(ctx context.Context, from string, imp *load.Import) (load.Resolved, error) {
	if imp.Module == "" {
		return load.ResolvePath(from, imp.Path)
	}
	m, err := r.Lookup(ctx, imp.Module)
	if err != nil {
		return load.Resolved{}, err
	}
	dir := filepath.Join(m.Dir, filepath.FromSlash(path.Clean("/" + imp.Dir))[1:])
	res, err := load.OpenDir(dir)
	if err != nil {
		return load.Resolved{}, fmt.Errorf("module %s@%s has no schema directory %q: %w", m.Path, m.Version, imp.Dir, err)
	}
	res.Module, res.Version, res.ModuleDir = m.Path, m.Version, m.Dir
	if m.Replace != nil {
		res.Replace = m.Replace.Path
		if m.Replace.Version != "" {
			res.Replace += "@" + m.Replace.Version
		}
	}
	return res, nil
}

// Lookup returns the module the service's build list selects for path, with
// its directory (downloading it into the module cache if it is not there
// yet). A module that go.mod does not require is an error naming the go
// get to run.
func (r *Resolver) Lookup(ctx context.Context, modPath string) (Module, error) {
	out, err := r.run(ctx, "list", "-m", "-json", modPath)
	if err != nil {
		if strings.Contains(err.Error(), "not a known dependency") {
			return Module{}, fmt.Errorf("module %s is not required by the service's go.mod: run go get %s", modPath, modPath)
		}
		if strings.Contains(err.Error(), "go.mod file not found") {
			return Module{}, fmt.Errorf("module %s: a module import is resolved through the go.mod of the service, and there is none in %s or above it (go mod init, then go get %s)", modPath, r.ModuleDir, modPath)
		}
		return Module{}, err
	}
	var m Module
	if err := json.Unmarshal(out, &m); err != nil {
		return Module{}, fmt.Errorf("go list -m -json %s: %w", modPath, err)
	}
	if m.Error != nil {
		return Module{}, fmt.Errorf("go list -m %s: %s", modPath, m.Error.Err)
	}
	if m.Replace != nil && m.Replace.Dir != "" {
		// The replacement is what is read; Version stays the one go.mod
		// requires.
		m.Dir = m.Replace.Dir
	}
	if m.Dir != "" {
		return m, nil
	}
	// Required but not in the module cache yet: download what is read (the
	// replacement, when another module replaces it). Path and Version stay
	// the ones go.mod requires, whatever the cache holds.
	path, version := m.Path, m.Version
	if m.Replace != nil && m.Replace.Version != "" {
		path, version = m.Replace.Path, m.Replace.Version
	}
	if version == "" {
		return Module{}, fmt.Errorf("module %s: the go command gives neither a directory nor a version", modPath)
	}
	d, err := r.Download(ctx, path, version)
	if err != nil {
		return Module{}, err
	}
	m.Dir = d.Dir
	return m, nil
}

// Download returns the module modPath at version, downloading it into
// the module cache when it is not there (through GOPROXY, as go get
// would): the version a dependency update is about to replace, or take.
func (r *Resolver) Download(ctx context.Context, modPath, version string) (Module, error) {
	out, err := r.run(ctx, "mod", "download", "-json", modPath+"@"+version)
	// Unlike go list -m, go mod download -json gives its Error as a string.
	var d struct {
		Version, Dir, Error string
	}
	if jerr := json.Unmarshal(out, &d); jerr == nil && d.Error != "" {
		return Module{}, fmt.Errorf("go mod download %s@%s: %s", modPath, version, d.Error)
	}
	if err != nil {
		return Module{}, err
	}
	if d.Dir == "" {
		return Module{}, fmt.Errorf("go mod download %s@%s: no directory", modPath, version)
	}
	return Module{Path: modPath, Version: d.Version, Dir: d.Dir}, nil
}

// run runs the go command in the service's module and returns its
// standard output, also when it fails: go mod download -json gives its
// reason there, in the JSON's Error. The error carries what the go command
// printed on standard error.
func (r *Resolver) run(ctx context.Context, args ...string) ([]byte, error) {
	bin := r.Go
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("go"); err != nil {
			return nil, fmt.Errorf("module imports are resolved with the go command: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = r.ModuleDir
	cmd.Env = r.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return stdout.Bytes(), fmt.Errorf("go %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}
