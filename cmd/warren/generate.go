package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/outdir"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
)

func init() { register(generateCommand) }

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Usage:     "compile a schema directory into a Go package",
		UsageText: "warren generate [--out DIR] [--package NAME] [--check] SCHEMA_DIR",
		Description: `Reads warren.json and every JSON Schema below SCHEMA_DIR and writes the Go
package: one type per fact, its embedded schema, one handler interface per
consumer. Files are written only when everything succeeded; generated files
that are no longer produced are removed. Hand-written files are never touched.

Examples:
   warren generate --out internal/catalogueevents ./events
   warren generate --check --out internal/catalogueevents ./events   # in CI

In a Go file of the output package:
   //go:generate go run github.com/warrenbus/warren/cmd/warren generate ../../events`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: ".", Usage: "write the package into `DIR`"},
			&cli.StringFlag{Name: "package", Usage: "Go package `NAME` (default: \"package\" in warren.json)"},
			&cli.BoolFlag{Name: "check", Usage: "write nothing; exit 1 and name the stale files if DIR is not up to date"},
		},
		Action: runGenerate,
	}
}

func runGenerate(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	files, err := generator.Generate(c.Context, dir, generator.Options{Package: c.String("package")})
	if err != nil {
		return reportError(stderr, "generate", dir, err)
	}
	out := c.String("out")
	plan, err := outdir.NewPlan(out, gogen.GeneratedHeader, files)
	if err != nil {
		return reportError(stderr, "generate", "", err)
	}
	if c.Bool("check") {
		stale := plan.Stale()
		if len(stale) == 0 {
			return nil
		}
		for _, name := range stale {
			fmt.Fprintf(stderr, "%s: stale; run warren generate\n", filepath.Join(out, name))
		}
		return errReported
	}
	if err := plan.Apply(); err != nil {
		return reportError(stderr, "generate", "", err)
	}
	return nil
}
