package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/gitbase"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/schemadiff"
)

func init() { register(diffCommand) }

// errDiffFailed ends warren diff when it could not compare at all, which a
// CI job must tell apart from exit 1, "found an unannounced break".
func errDiffFailed(msg string) error { return cli.Exit(msg, 2) }

func diffCommand() *cli.Command {
	var breaking, compatible []string
	for _, r := range schemadiff.Rules {
		if r.Breaking() {
			breaking = append(breaking, r.Name)
		} else {
			compatible = append(compatible, r.Name)
		}
	}
	return &cli.Command{
		Name:  "diff",
		Usage: "judge the changes between two schema directories in both deploy directions",
		UsageText: "warren diff [--format text|markdown|json|github|sarif] OLD_DIR NEW_DIR\n" +
			"warren diff [--format text|markdown|json|github|sarif] --base REV NEW_DIR\n" +
			"warren diff [--format text|markdown|json|github|sarif] --base-module MODULE@VERSION SCHEMA_DIR",
		Description: `Compares every fact (following $refs) and every consumer's bindings and
queues, and judges each change in both directions: forward (a consumer built
from the old schema receiving facts written under the new one) and backward (a
consumer built from the new schema receiving facts written under the old one:
still queued, poisoned, in an outbox, replayed). Consumers validate every
delivery against the schema compiled into them and poison what fails, or what
they have no handler for.

The compatibility mode says which directions must keep working: the manifest's
"compatibility" (default FULL), or a fact's "x-compatibility". Modes are
BACKWARD, FORWARD, FULL, each also _TRANSITIVE, and NONE. A change that breaks a
direction its mode requires is an unannounced break, or intentional when the
fact's x-version went up (removing a fact: once it was marked "deprecated":
true). One that breaks only a direction the mode allows is "ordered": the
report says which side must deploy first.

With --base, the old directory is read from git at revision REV: the same path
as NEW_DIR, relative to the root of its repository. Facts in a _TRANSITIVE mode
are also compared with every version of them in git history since their
x-version was last raised.

With --base-module, in a consumer's repository, SCHEMA_DIR imports facts from
MODULE: its schema directory at VERSION (the version being left) is compared
with the one the service's go.mod pins now (after go get MODULE@NEW), and only
the facts SCHEMA_DIR's consumers bind count. A break the producer announced by
raising x-version still breaks these consumers, so it fails here too.

Exit status: 0 when nothing breaks unannounced; 1 when something does, or when
NEW_DIR loads but does not build (warren check refuses it: the report is
printed, then its errors on stderr); 2 when the directories could not be
compared (files that do not load, invalid schemas, unknown revision).

Rules that can break:
` + wrapList(breaking) + `
Rules that never break:
` + wrapList(compatible) + `

Examples:
   warren diff ../main/events ./events
   warren diff --base origin/main --format markdown ./events > comment.md   # in CI
   warren diff --base origin/main --format github ./events   # annotations in a GitHub pull request
   warren diff --base origin/main --format sarif ./events > warren.sarif   # for code scanning
   warren diff --base-module github.com/acme/catalogue-events@v1.3.0 ./events   # after go get ...@v1.4.0`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, markdown, json, github (workflow commands that annotate the changed lines) or sarif (SARIF 2.1.0, for code scanning)"},
			&cli.StringFlag{Name: "base", Usage: "read OLD_DIR from git at revision `REV` (e.g. origin/main)"},
			&cli.StringFlag{Name: "base-module", Usage: "compare the imported `MODULE@VERSION` with the version go.mod pins, for SCHEMA_DIR's consumers"},
		},
		Action: runDiff,
	}
}

func runDiff(c *cli.Context) error {
	format := c.String("format")
	switch format {
	case "text", "markdown", "json", "github", "sarif":
	default:
		return usageError(c, "--format %q: expected text, markdown, json, github or sarif", format)
	}
	base := c.String("base")
	args := c.Args().Slice()
	if bm := c.String("base-module"); bm != "" {
		if base != "" || len(args) != 1 {
			return usageError(c, "with --base-module, expected one SCHEMA_DIR and no --base, got %q", args)
		}
		return runDiffImport(c, args[0], bm, format)
	}
	var newDir string
	var loadOld func() (*schemadiff.Dir, error)
	var labels schemadiff.Labels
	switch {
	case base != "" && len(args) == 1:
		newDir = args[0]
		tree, err := gitbase.Read(c.Context, newDir, base)
		if err != nil {
			return errDiffFailed(fmt.Sprintf("warren diff: %v", err))
		}
		loadOld = func() (*schemadiff.Dir, error) {
			return openSide(c.Context, ".", generator.Options{FS: tree.FS, Resolver: gitImportResolver(newDir, base)})
		}
		labels = schemadiff.Labels{Old: tree.Label, New: filepath.ToSlash(newDir)}
	case base == "" && len(args) == 2:
		oldDir := args[0]
		newDir = args[1]
		loadOld = func() (*schemadiff.Dir, error) {
			return openSide(c.Context, oldDir, genOptions(oldDir))
		}
		labels = schemadiff.Labels{Old: filepath.ToSlash(oldDir), New: filepath.ToSlash(newDir)}
	case base != "":
		return usageError(c, "with --base, expected one NEW_DIR, got %q", args)
	default:
		return usageError(c, "expected OLD_DIR NEW_DIR, got %q", args)
	}

	stderr := c.App.ErrWriter
	old, err := loadOld()
	if err != nil {
		reportError(stderr, "diff", labels.Old, err)
		return errDiffFailed(fmt.Sprintf("warren diff: the old directory %s is not valid", labels.Old))
	}
	cur, invalid, err := openNewSide(c.Context, newDir, genOptions(newDir))
	if err != nil {
		reportError(stderr, "diff", newDir, err)
		return errDiffFailed(fmt.Sprintf("warren diff: the new directory %s is not valid", newDir))
	}
	var older []schemadiff.Version
	if base != "" {
		if older, err = olderVersions(c, newDir, base, old, cur); err != nil {
			return errDiffFailed(fmt.Sprintf("warren diff: %v", err))
		}
	} else if f := firstTransitive(cur); f != "" {
		fmt.Fprintf(stderr, "warren diff: note: %s is in a _TRANSITIVE mode, but without --base there is no history to compare it with; it is compared with OLD_DIR only\n", f)
	}
	err = writeDiff(c, schemadiff.CompareHistory(old, older, cur), format, labels)
	if len(invalid) == 0 || err != nil && err != errReported {
		return err
	}
	// The files compared, but what they declare does not build: the
	// report stands, and so does the change's failure.
	reportError(stderr, "diff", newDir, invalid)
	fmt.Fprintf(stderr, "warren diff: the new directory %s does not build (%s): warren check and generate refuse it, so the change cannot ship as it is\n", newDir, count(len(invalid), "validation error"))
	return errReported
}

// openSide reads one side of a comparison with generator.Open. Only its
// files need to load, not its model to build: an old directory that this
// warren would reject can still be compared.
func openSide(ctx context.Context, dir string, opts generator.Options) (*schemadiff.Dir, error) {
	p, err := generator.Open(ctx, dir, opts)
	if p == nil {
		return nil, err
	}
	return schemadiff.NewDir(p.Schemas), nil
}

// openNewSide is openSide for the directory after the change, which must
// also declare its versions' upcasts truthfully: an x-upcast "generated"
// on a change that is not mechanical is an error here as in generate.
// The other errors of a model that does not build come back as invalid,
// beside the directory: it can be compared, but not shipped.
func openNewSide(ctx context.Context, dir string, opts generator.Options) (_ *schemadiff.Dir, invalid load.ErrorList, _ error) {
	p, err := generator.Open(ctx, dir, opts)
	if p == nil {
		return nil, nil, err
	}
	if errors.As(err, &invalid) {
		var upcasts load.ErrorList
		for _, e := range invalid {
			if e.Pointer == "/x-upcast" {
				upcasts = append(upcasts, e)
			}
		}
		if len(upcasts) > 0 {
			return nil, nil, upcasts
		}
	}
	return schemadiff.NewDir(p.Schemas), invalid, nil
}

// writeDiff prints the report in format and exits 1 when something breaks
// unannounced.
func writeDiff(c *cli.Context, r *schemadiff.Report, format string, labels schemadiff.Labels) error {
	var err error
	switch format {
	case "markdown":
		err = r.WriteMarkdown(c.App.Writer, labels)
	case "json":
		err = r.WriteJSON(c.App.Writer)
	case "github":
		err = r.WriteGitHub(c.App.Writer, labels)
	case "sarif":
		err = r.WriteSARIF(c.App.Writer, labels)
	default:
		err = r.WriteText(c.App.Writer, labels)
	}
	if err != nil {
		return errDiffFailed(fmt.Sprintf("warren diff: write the report: %v", err))
	}
	if r.Unannounced() > 0 {
		return errReported
	}
	return nil
}

// firstTransitive returns the routing key of the first fact in a
// _TRANSITIVE mode, "" when there is none.
func firstTransitive(d *schemadiff.Dir) string {
	for _, f := range d.Schemas.Facts {
		if d.Mode(f).Transitive() {
			return f.RoutingKey
		}
	}
	return ""
}

// olderVersions reads, from the git history before base, the older
// versions of the schema directory that a _TRANSITIVE fact must still be
// compatible with: newest first, for as long as some such fact has the
// x-version it has at base. An older state that no longer loads ends the
// walk, with a warning: nothing before it can be compared.
func olderVersions(c *cli.Context, newDir, base string, old, cur *schemadiff.Dir) ([]schemadiff.Version, error) {
	pending := map[string]int{} // routing key -> x-version at base
	for _, f := range cur.Schemas.Facts {
		if b := old.Fact(f.RoutingKey); b != nil && cur.Mode(f).Transitive() && b.Version == f.Version {
			pending[f.RoutingKey] = b.Version
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	commits, err := gitbase.History(c.Context, newDir, base)
	if err != nil {
		return nil, err
	}
	var older []schemadiff.Version
	for _, commit := range commits {
		if len(pending) == 0 {
			break
		}
		tree, err := gitbase.Read(c.Context, newDir, commit)
		if err != nil {
			return older, nil // the directory did not exist yet
		}
		d, err := openSide(c.Context, ".", generator.Options{FS: tree.FS, Resolver: gitImportResolver(newDir, commit)})
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "warren diff: %s does not load, so versions before it are not compared: %v\n", tree.Label, err)
			return older, nil
		}
		older = append(older, schemadiff.Version{Label: tree.Label, Dir: d})
		for key, v := range pending {
			if f := d.Fact(key); f == nil || f.Version != v {
				delete(pending, key)
			}
		}
	}
	return older, nil
}

// wrapList prints names indented, several to a line.
func wrapList(names []string) string {
	var b strings.Builder
	line := "  "
	for _, n := range names {
		if len(line)+len(n)+1 > 78 {
			b.WriteString(line + "\n")
			line = "  "
		}
		line += " " + n
	}
	return b.String() + line
}
