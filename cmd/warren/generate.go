package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
	"github.com/warrenbus/warren/cmd/warren/internal/outdir"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/generator/lint"
)

func init() { register(generateCommand) }

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "compile a schema directory into a Go package",
		UsageText: "warren generate [--out DIR] [--package NAME] [--check] SCHEMA_DIR",
		Description: `Reads warren.json and every JSON Schema below SCHEMA_DIR and writes the Go
package: one type per fact, its embedded schema, one handler interface per
consumer. Inside a Go module it also writes the package's test kit into
DIR/<package>test, importing DIR by the path the enclosing go.mod gives it.
Files are written only when everything succeeded; generated files that are no
longer produced are removed. Hand-written files are never touched. A directory
with a lint finding of severity error (see warren check) is refused, as an
invalid one is; warnings are warren check's to print.

Examples:
   warren generate --out internal/catalogueevents ./events
   warren generate --check --out internal/catalogueevents ./events   # in CI

As a tool of the service (go get -tool github.com/warrenbus/warren/cmd/warren),
in a hand-written file of the output package, below the package clause:
   //go:generate go tool warren generate ../../events
--check names each file that is missing, differs, or is no longer generated.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: ".", Usage: "write the package into `DIR`"},
			&cli.StringFlag{Name: "package", Usage: "Go package `NAME` (default: \"package\" in warren.json)"},
			&cli.BoolFlag{Name: "check", Usage: "write nothing; exit 1 and name the missing and stale files if DIR is not up to date"},
		},
		Action: runGenerate,
	}
}

func runGenerate(c *cli.Context) error {
	collectLessOften()
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	opts, err := goOptions(c, dir)
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	out := c.String("out")
	// The test kit imports the package, so it needs the package's import
	// path; outside a module there is none, and no kit.
	importPath, _, err := gomod.PackagePath(out)
	if err != nil {
		return reportError(stderr, "generate", "", err)
	}
	opts.ImportPath = importPath
	p, err := generator.Open(c.Context, dir, opts)
	if err != nil {
		return reportError(stderr, "generate", dir, err)
	}
	if err := refuseLintErrors(stderr, p, dir); err != nil {
		return err
	}
	if !c.Bool("check") {
		// A new directory is written as the files are generated.
		fresh, err := outdir.NewFresh(out)
		if err != nil {
			return reportError(stderr, "generate", "", err)
		}
		if fresh != nil {
			return writeFresh(stderr, p, fresh, dir)
		}
	}
	files, err := p.GoFiles()
	if err != nil {
		return reportError(stderr, "generate", dir, err)
	}
	plan, err := outdir.NewPlan(out, gogen.GeneratedHeader, files, gogen.KitFile)
	if err != nil {
		return reportError(stderr, "generate", "", err)
	}
	if c.Bool("check") {
		if len(plan.Stale()) == 0 {
			return nil
		}
		reportStale(stderr, plan, "warren generate")
		return errReported
	}
	if err := plan.Apply(); err != nil {
		return reportError(stderr, "generate", "", err)
	}
	return nil
}

// writeFresh writes the package p generates from dir into the new
// directory fresh, each file as soon as it is generated.
func writeFresh(stderr io.Writer, p *generator.Project, fresh *outdir.Fresh, dir string) error {
	var mu sync.Mutex
	var writeErr error // the first; it is reported as Apply's are
	err := p.EachGoFile(func(name string, src []byte) error {
		err := fresh.Write(name, src)
		if err != nil {
			mu.Lock()
			writeErr = cmp.Or(writeErr, err)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		fresh.Abort()
		if writeErr != nil {
			return reportError(stderr, "generate", "", writeErr)
		}
		return reportError(stderr, "generate", dir, err)
	}
	if err := fresh.Commit(); err != nil {
		return reportError(stderr, "generate", "", err)
	}
	return nil
}

// refuseLintErrors prints, one per line on w as `warren check` prints
// them, the error findings of the lint rules (lint.Errors): a directory
// that builds a model but whose generated code cannot work as written (a
// saga no fact starts, a fact of "startsWith" told not to start one, a
// required name no property declares), and returns errReported when
// there is one, before anything is written. Warnings and info are `warren
// check`'s to print: generate, which go generate runs on every change,
// says nothing when it succeeds.
func refuseLintErrors(w io.Writer, p *generator.Project, dir string) error {
	findings := lint.Errors(lint.NewInput(p.Schemas, p.Model))
	if len(findings) == 0 {
		return nil
	}
	for _, f := range findings {
		f.File = shownFile(dir, f.File)
		fmt.Fprintln(w, f)
	}
	fmt.Fprintf(w, "warren generate: %s: %s; nothing was written (warren check %s lists every finding)\n", dir, count(len(findings), "lint error"), dir)
	return errReported
}

// collectLessOften lets the heap grow to five times what is live between
// garbage collections instead of twice, within 1 GiB, unless GOGC or
// GOMEMLIMIT say otherwise: generating a package allocates much that lives
// briefly, and with the default the collector took a fifth of the time of
// a thousand facts.
func collectLessOften() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}

// reportStale names, one per line, each file --check found wanting: one
// that does not exist yet (a new schema, or a package never generated),
// one whose content differs (a schema changed since the last run), and a
// generated file no schema produces any more. fix is the command that
// brings the directory up to date.
func reportStale(w io.Writer, plan *outdir.Plan, fix string) {
	missing := map[string]bool{}
	for _, name := range plan.Missing {
		missing[name] = true
	}
	removed := map[string]bool{}
	for _, name := range plan.Remove {
		removed[name] = true
	}
	for _, name := range plan.Stale() {
		path := filepath.Join(plan.Dir, filepath.FromSlash(name))
		switch {
		case missing[name]:
			fmt.Fprintf(w, "%s: missing; run %s\n", path, fix)
		case removed[name]:
			fmt.Fprintf(w, "%s: stale, no longer generated; run %s to remove it\n", path, fix)
		default:
			fmt.Fprintf(w, "%s: stale, differs from what would be generated; run %s\n", path, fix)
		}
	}
}
