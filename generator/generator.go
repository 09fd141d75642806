// Package generator compiles a warren schema directory into the Go files
// of a package. It is pure: it reads the schema directory, writes nothing
// and touches no network; the CLI decides where the files go.
//
// The pipeline is load (files, positions, meta-schemas) -> model (facts,
// types, consumers, topology; validated as a whole) -> a renderer: gogen
// (Go, with jennifer), docgen (the Markdown catalogue) or asyncapi (an
// AsyncAPI 3.0.0 document).
package generator

import (
	"context"
	"io/fs"

	"github.com/warrenbus/warren/generator/asyncapi"
	"github.com/warrenbus/warren/generator/docgen"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Options adjust generation.
type Options struct {
	// Package overrides the Go package name from warren.json.
	Package string
	// Resolver finds the directories the manifest's "imports" name; nil
	// resolves relative paths on disk and refuses module imports (the
	// warren CLI resolves those with the Go toolchain).
	Resolver load.Resolver
}

// Generate compiles the schema directory dir and returns the generated
// files, keyed by file name. Errors in the input come back as a
// load.ErrorList, one entry per problem with file and position (relative to
// dir); nothing is returned then.
func Generate(ctx context.Context, dir string, opts Options) (map[string][]byte, error) {
	s, err := load.LoadWith(ctx, dir, load.Options{Resolver: opts.Resolver})
	if err != nil {
		return nil, err
	}
	return generate(ctx, s, opts)
}

// GenerateFS is [Generate] for a schema directory held in a file system.
func GenerateFS(ctx context.Context, fsys fs.FS, opts Options) (map[string][]byte, error) {
	s, err := load.LoadFSWith(ctx, fsys, load.Options{Resolver: opts.Resolver})
	if err != nil {
		return nil, err
	}
	return generate(ctx, s, opts)
}

// Model loads and validates the schema directory dir exactly as [Generate]
// does and returns its model: the facts, types, consumers and broker
// topology, for the commands that work on a directory's broker. Unlike
// Generate it needs no Go package name: Model.Package is "" when warren.json
// has none. Errors in the input come back as a load.ErrorList.
func Model(ctx context.Context, dir string) (*model.Model, error) {
	return ModelWith(ctx, dir, Options{})
}

// ModelWith is [Model] with options (opts.Resolver; Package is ignored).
func ModelWith(ctx context.Context, dir string, opts Options) (*model.Model, error) {
	m, _, err := buildModel(ctx, dir, opts)
	return m, err
}

// Docs renders the documentation of the schema directory dir, keyed by file
// name (docgen.CatalogueFile: the Markdown catalogue). It validates as
// [Model] does and, like Generate, writes nothing.
func Docs(ctx context.Context, dir string) (map[string][]byte, error) {
	return DocsWith(ctx, dir, Options{})
}

// DocsWith is [Docs] with options (opts.Resolver; Package is ignored).
func DocsWith(ctx context.Context, dir string, opts Options) (map[string][]byte, error) {
	m, s, err := buildModel(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return docgen.Generate(m, s)
}

// AsyncAPI renders the schema directory dir as an AsyncAPI 3.0.0 document.
// It validates as [Model] does and writes nothing.
func AsyncAPI(ctx context.Context, dir string, opts asyncapi.Options) ([]byte, error) {
	return AsyncAPIWith(ctx, dir, Options{}, opts)
}

// AsyncAPIWith is [AsyncAPI] with the generator's options (opts.Resolver;
// Package is ignored).
func AsyncAPIWith(ctx context.Context, dir string, gen Options, opts asyncapi.Options) ([]byte, error) {
	m, s, err := buildModel(ctx, dir, gen)
	if err != nil {
		return nil, err
	}
	return asyncapi.Generate(m, s, opts)
}

// buildModel loads dir and builds the model of its facts and topology for
// the outputs that are not Go.
func buildModel(ctx context.Context, dir string, opts Options) (*model.Model, *load.Schemas, error) {
	s, err := load.LoadWith(ctx, dir, load.Options{Resolver: opts.Resolver})
	if err != nil {
		return nil, nil, err
	}
	m, err := model.Build(ctx, s, model.Options{PackageOptional: true})
	if err != nil {
		return nil, nil, err
	}
	return m, s, nil
}

func generate(ctx context.Context, s *load.Schemas, opts Options) (map[string][]byte, error) {
	m, err := model.Build(ctx, s, model.Options{Package: opts.Package})
	if err != nil {
		return nil, err
	}
	return gogen.Generate(m)
}
