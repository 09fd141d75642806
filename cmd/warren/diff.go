package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator/schemadiff"
	"github.com/warrenbus/warren/generator/schemadiff/gitbase"
)

func init() { register(diffCommand) }

// errDiffFailed ends warren diff when it could not compare at all, which a
// CI job must tell apart from exit 1, "found an unannounced break".
func errDiffFailed(msg string) error { return cli.Exit(msg, 2) }

func diffCommand() *cli.Command {
	var breaking, compatible []string
	for _, r := range schemadiff.Rules {
		if r.Breaking {
			breaking = append(breaking, r.Name)
		} else {
			compatible = append(compatible, r.Name)
		}
	}
	return &cli.Command{
		Name:  "diff",
		Usage: "classify the changes between two schema directories as breaking or compatible",
		UsageText: "warren diff [--format text|markdown|json] OLD_DIR NEW_DIR\n" +
			"warren diff [--format text|markdown|json] --base REV NEW_DIR",
		Description: `Compares every fact (following $refs) and every consumer's bindings, and
classifies each change. A breaking change to a fact whose x-version went up is
intentional; otherwise it is an unannounced break. Removing a fact is
intentional once the old fact was marked "deprecated": true.

With --base, the old directory is read from git at revision REV: the same path
as NEW_DIR, relative to the root of its repository.

Exit status: 0 when nothing breaks unannounced, 1 when something does, 2 when
the directories could not be compared (invalid schemas, unknown revision).

Breaking rules:
` + wrapList(breaking) + `
Compatible rules:
` + wrapList(compatible) + `

Examples:
   warren diff ../main/events ./events
   warren diff --base origin/main --format markdown ./events > comment.md   # in CI`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, markdown or json"},
			&cli.StringFlag{Name: "base", Usage: "read OLD_DIR from git at revision `REV` (e.g. origin/main)"},
		},
		Action: runDiff,
	}
}

func runDiff(c *cli.Context) error {
	format := c.String("format")
	if format != "text" && format != "markdown" && format != "json" {
		return usageError(c, "--format %q: expected text, markdown or json", format)
	}
	base := c.String("base")
	args := c.Args().Slice()
	var oldDir, newDir string
	var labels schemadiff.Labels
	switch {
	case base != "" && len(args) == 1:
		newDir = args[0]
		tree, err := gitbase.Export(c.Context, newDir, base)
		if err != nil {
			return errDiffFailed(fmt.Sprintf("warren diff: %v", err))
		}
		defer tree.Remove()
		oldDir = tree.Dir
		labels = schemadiff.Labels{Old: tree.Label, New: filepath.ToSlash(newDir)}
	case base == "" && len(args) == 2:
		oldDir, newDir = args[0], args[1]
		labels = schemadiff.Labels{Old: filepath.ToSlash(oldDir), New: filepath.ToSlash(newDir)}
	case base != "":
		return usageError(c, "with --base, expected one NEW_DIR, got %q", args)
	default:
		return usageError(c, "expected OLD_DIR NEW_DIR, got %q", args)
	}

	stderr := c.App.ErrWriter
	old, err := schemadiff.Load(c.Context, oldDir)
	if err != nil {
		reportError(stderr, "diff", labels.Old, err)
		return errDiffFailed(fmt.Sprintf("warren diff: the old directory %s is not valid", labels.Old))
	}
	cur, err := schemadiff.Load(c.Context, newDir)
	if err != nil {
		reportError(stderr, "diff", newDir, err)
		return errDiffFailed(fmt.Sprintf("warren diff: the new directory %s is not valid", newDir))
	}
	r := schemadiff.Compare(old, cur)
	switch format {
	case "markdown":
		err = r.WriteMarkdown(c.App.Writer, labels)
	case "json":
		err = r.WriteJSON(c.App.Writer)
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
