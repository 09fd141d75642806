package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/docgen"
)

func init() { register(docsCommand) }

func docsCommand() *cli.Command {
	return &cli.Command{
		Name:      "docs",
		Usage:     "write a Markdown catalogue of the facts, streams, consumers and topology",
		UsageText: "warren docs [--out FILE] [--check] SCHEMA_DIR",
		Description: `Renders SCHEMA_DIR as one Markdown page for people: every fact (routing key,
Go type, version, description, deprecation, a table of its properties), every
type the facts share, every stream (bindings, the facts it keeps, retention,
a super stream's partitions, whether facts are written into it directly, who
reads it), every consumer (bindings, the facts it handles, its queues and
retry ladder; for a stream consumer, the stream it reads and from where), and
a Mermaid diagram of exchanges, streams, queues and consumers, which GitHub
and GitLab draw. The page is the same for the same directory, so it can be
committed and kept fresh in CI.

Examples:
   warren docs ./events > docs/events.md
   warren docs --out docs/events.md ./events
   warren docs --check --out docs/events.md ./events   # in CI: exit 1 when the page is missing or stale`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of standard output"},
			checkFlag(),
		},
		Action: runDocs,
	}
}

func runDocs(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(c.App.ErrWriter, "docs", dir, err)
	}
	files, err := p.Docs()
	if err != nil {
		return reportError(c.App.ErrWriter, "docs", dir, err)
	}
	page := files[docgen.CatalogueFile]
	fix := fmt.Sprintf("warren docs --out %s %s", c.String("out"), dir)
	if err := writeOrCheck(c, page, fix); err != nil {
		if _, reported := err.(cli.ExitCoder); reported {
			return err
		}
		return reportError(c.App.ErrWriter, "docs", "", err)
	}
	return nil
}
