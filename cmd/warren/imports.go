package main

import (
	"context"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/gitbase"
	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
)

// importResolver resolves the imports of the schema directory dir: paths
// relative to it, modules with the go command run in dir, so that the
// versions are the ones the service's go.mod pins.
func importResolver(dir string) load.Resolver {
	return &gomod.Resolver{ModuleDir: dir}
}

// genOptions are the generator options of every command that reads the
// schema directory dir.
func genOptions(dir string) generator.Options {
	return generator.Options{Resolver: importResolver(dir)}
}

// goOptions are those of the commands that validate dir as Go is emitted
// from it (generate, check): a Go package name is required, and --package
// overrides the manifest's. A --package that is no package name is a
// wrong command line (exit 2, with the usage line), as a bad --format
// is; the model checks it again for callers of the generator library.
// An empty one is not given, as when it is left out.
func goOptions(c *cli.Context, dir string) (generator.Options, error) {
	opts := genOptions(dir)
	opts.Package, opts.Go = c.String("package"), true
	if opts.Package != "" {
		if why := names.CheckPackage(opts.Package); why != "" {
			return opts, usageError(c, "--package %q: %s; expected a Go package name, such as \"catalogueevents\"", opts.Package, why)
		}
	}
	return opts, nil
}

// gitImportResolver resolves the imports of the schema directory dir as it
// was at git revision rev: a path import is read from the same revision; a
// module import is the version the working tree's go.mod pins (compare
// module versions with warren diff --base-module).
func gitImportResolver(dir, rev string) load.Resolver {
	return &gitResolver{dir: dir, rev: rev, modules: importResolver(dir)}
}

type gitResolver struct {
	dir, rev string
	modules  load.Resolver
}

func (g *gitResolver) Resolve(ctx context.Context, from string, imp *load.Import) (load.Resolved, error) {
	if imp.Module != "" {
		return g.modules.Resolve(ctx, from, imp)
	}
	if from == "" {
		from = g.dir
	}
	target := filepath.Join(from, filepath.FromSlash(imp.Path))
	tree, err := gitbase.Read(ctx, target, g.rev)
	if err != nil {
		return load.Resolved{}, err
	}
	// Dir is the working-tree counterpart: the import's own relative
	// imports start there, and cycles are told by it.
	abs, err := filepath.Abs(target)
	if err != nil {
		return load.Resolved{}, err
	}
	return load.Resolved{FS: tree.FS, Dir: abs}, nil
}
