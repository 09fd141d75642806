package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/lint"
	"github.com/warrenbus/warren/generator/load"
)

func init() { register(checkCommand) }

func checkCommand() *cli.Command {
	var rules strings.Builder
	for _, r := range lint.Rules {
		fmt.Fprintf(&rules, "   %-32s %-8s %s\n", r.Name, r.Severity, r.Doc)
	}
	return &cli.Command{
		Name:      "check",
		Usage:     "validate a schema directory and lint it",
		UsageText: "warren check [--strict] [--format text|json] [--package NAME] SCHEMA_DIR",
		Description: `Validates SCHEMA_DIR exactly as warren generate does, then lints it. Every
finding prints as file:line:col: rule: message (severity). Exit status: 1 when
the directory is invalid or a finding is an error; warnings fail only with
--strict; info never fails.

Rules:
` + rules.String() + `
A schema file turns rules off for its own findings with a keyword at its root:
   "x-warren-lint": {"disable": ["past-tense", "fact-unconsumed"]}

Examples:
   warren check ./events
   warren check --strict ./events   # in CI`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "exit 1 on warnings too"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
			&cli.StringFlag{Name: "package", Usage: "Go package `NAME`, as for warren generate (default: \"package\" in warren.json)"},
		},
		Action: runCheck,
	}
}

func runCheck(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return usageError(c, "--format %q: expected text or json", format)
	}
	opts, err := goOptions(c, dir)
	if err != nil {
		return err
	}
	stdout, stderr := c.App.Writer, c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, opts)
	if p == nil {
		var list load.ErrorList
		switch {
		case !errors.As(err, &list):
			return reportError(stderr, "check", dir, err)
		case format == "json":
			if err := writeCheckJSON(stdout, dir, list, nil); err != nil {
				return err
			}
			return errReported
		}
		// The same summary as when the model fails, whichever step found
		// the errors; the linter needs files that load.
		reportError(stderr, "check", dir, list)
		fmt.Fprintf(stdout, "%s: %s (lint runs once the files load)\n", dir, count(len(list), "validation error"))
		return errReported
	}
	findings := p.Lint()
	invalid, err := invalidErrors(p, err, findings)
	if err != nil {
		return reportError(stderr, "check", dir, err)
	}

	errs, warnings, infos := lint.Count(findings)
	if format == "json" {
		if err := writeCheckJSON(stdout, dir, invalid, findings); err != nil {
			return err
		}
	} else {
		if len(invalid) > 0 {
			reportError(stderr, "check", dir, invalid)
		}
		for _, f := range findings {
			f.File = shownFile(dir, f.File)
			fmt.Fprintln(stdout, f)
		}
		if len(findings) > 0 || len(invalid) > 0 {
			fmt.Fprintf(stdout, "%s: %s\n", dir, checkSummary(len(invalid), errs, warnings, infos))
		}
	}
	switch {
	case len(invalid) > 0 || errs > 0:
		return errReported
	case warnings > 0 && c.Bool("strict"):
		return cli.Exit("warren check: warnings fail with --strict", 1)
	}
	return nil
}

// invalidErrors returns everything generate validates beyond loading
// (types, names, topology, the Go files): the model's errors, as Open
// returned them in err, else those of rendering the Go files. An error
// that is not the input's is returned as the second result. A binding
// that matches nothing fails the model too; the lint finding says it with
// a rule name, so the model's copy is dropped.
func invalidErrors(p *generator.Project, err error, findings []lint.Finding) (load.ErrorList, error) {
	if err == nil {
		_, err = p.GoFiles()
	}
	var invalid load.ErrorList
	if err != nil && !errors.As(err, &invalid) {
		return nil, err
	}
	return withoutLintDuplicates(invalid, findings), nil
}

// withoutLintDuplicates drops validation errors that a lint finding
// already reports at the same place.
func withoutLintDuplicates(list load.ErrorList, findings []lint.Finding) load.ErrorList {
	linted := map[string]bool{}
	for _, f := range findings {
		if f.Rule == lint.BindingMatchesNothing {
			linted[f.File+"#"+f.Pointer] = true
		}
	}
	var out load.ErrorList
	for _, e := range list {
		if !linted[e.File+"#"+e.Pointer] {
			out = append(out, e)
		}
	}
	return out
}

func checkSummary(invalid, errs, warnings, infos int) string {
	var parts []string
	if invalid > 0 {
		parts = append(parts, count(invalid, "validation error"))
	}
	parts = append(parts, count(errs, "error"), count(warnings, "warning"), fmt.Sprintf("%d info", infos))
	return strings.Join(parts, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// checkJSON is the shape of `warren check --format json`.
type checkJSON struct {
	Valid    bool           `json:"valid"`    // no validation error
	Errors   []checkError   `json:"errors"`   // validation errors
	Findings []checkFinding `json:"findings"` // lint findings
}

type checkError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

type checkFinding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Pointer  string `json:"pointer"`
	Message  string `json:"message"`
}

// writeCheckJSON writes the report for tools. Files are named as the text
// report names them (the schema directory as given, joined with the file),
// so a tool can open them from where warren ran.
func writeCheckJSON(w io.Writer, dir string, invalid load.ErrorList, findings []lint.Finding) error {
	out := checkJSON{Valid: len(invalid) == 0, Errors: []checkError{}, Findings: []checkFinding{}}
	for _, e := range invalid {
		out.Errors = append(out.Errors, checkError{shownFile(dir, e.File), e.Line, e.Col, e.Pointer, e.Msg})
	}
	for _, f := range findings {
		out.Findings = append(out.Findings, checkFinding{f.Rule, f.Severity.String(), shownFile(dir, f.File), f.Line, f.Col, f.Pointer, f.Message})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
