package main

import (
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/internal/gomod"
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
