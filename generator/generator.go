// Package generator compiles a warren schema directory into the Go files
// of a package. It is pure: it reads the schema directory, writes nothing
// and touches no network; the CLI decides where the files go.
//
// The pipeline is load (files, positions, meta-schemas) -> model (facts,
// types, consumers, topology; validated as a whole) -> a renderer: gogen
// (Go, with jennifer), docgen (the Markdown catalogue) or asyncapi (an
// AsyncAPI 3.0.0 document).
//
// [Open] is the one way in: it loads a directory and builds its model, and
// every warren command starts from the [Project] it returns, so that a
// directory is read the same way by all of them. [Generate] is Open
// followed by [Project.GoFiles].
package generator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/warrenbus/warren/generator/asyncapi"
	"github.com/warrenbus/warren/generator/docgen"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/generator/lint"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Options adjust how a schema directory is opened.
type Options struct {
	// Package overrides the Go package name from warren.json.
	Package string
	// Go opens the directory to emit Go, as [Generate] does: a Go package
	// name (Package, else warren.json's "package") is then required, and
	// its absence is one of the directory's errors. Readers that emit no
	// Go (docs, topology, the broker commands) leave it false; a name that
	// is given is checked either way, so every command agrees on what a
	// valid directory is.
	Go bool
	// Resolver finds the directories the manifest's "imports" name; nil
	// resolves relative paths on disk and refuses module imports (the
	// warren CLI resolves those with the Go toolchain).
	Resolver load.Resolver
	// FS, when set, holds the schema directory instead of the disk: a git
	// revision's tree, an embed.FS, an fstest.MapFS. The dir given to
	// [Open] is then a path in FS, "." for its root, and paths in errors
	// are relative to it.
	FS fs.FS
	// ImportPath is the Go import path the generated package will have
	// ("example.com/shop/internal/catalogueevents"). When it is set,
	// [Project.GoFiles] also renders the package's test kit, which imports
	// the package (see gogen.Kit); when it is empty, there is no kit. The
	// warren CLI sets it from the go.mod that encloses --out.
	ImportPath string
}

// Project is a schema directory read by [Open]: its files loaded and
// validated, and the model built from them.
type Project struct {
	// Schemas are the loaded files: facts, shared definitions, the
	// manifest, imports, each with positions. Always set.
	Schemas *load.Schemas
	// Model holds the facts with their Go types, the consumers and the
	// broker topology. It is nil when Open also returned an error: the
	// files loaded, but the model did not build.
	Model *model.Model

	importPath string // Options.ImportPath
}

// Open reads the schema directory dir (on disk, or in opts.FS) and builds
// its model.
//
// Errors in the input come back as a load.ErrorList, one entry per problem
// with file and position relative to dir, sorted. When the loader's only
// problems are values of warren.json it could read around, the list holds
// the model's problems with the rest too, less those about the values
// reported (see load.Load), and no Project. When the files load but
// the model does not build, Open returns the Project together with that
// error, as go/parser returns the part of a file it could parse: Schemas is
// set and Model is nil. The linter ([Project.Lint]) and a comparison of two
// directories need no more than that; every other caller stops at the
// error. A directory that cannot be read, or a cancelled ctx, returns no
// Project.
func Open(ctx context.Context, dir string, opts Options) (*Project, error) {
	s, err := loadDir(ctx, dir, opts)
	if err != nil {
		var read load.ErrorList
		if s == nil || !errors.As(err, &read) {
			return nil, err
		}
		// The loader read around what it reported (load.Load), so the
		// model's checks run on the rest and a run prints every problem
		// at once. The files did not load: no Project.
		_, err = model.Build(ctx, s, model.Options{Package: opts.Package, PackageOptional: !opts.Go})
		var more load.ErrorList
		switch {
		case errors.As(err, &more):
			read = append(read, read.WithoutFollowOns(more)...)
		case err != nil:
			return nil, err
		}
		return nil, read.Err()
	}
	m, err := model.Build(ctx, s, model.Options{Package: opts.Package, PackageOptional: !opts.Go})
	var list load.ErrorList
	switch {
	case errors.As(err, &list):
		return &Project{Schemas: s, importPath: opts.ImportPath}, err
	case err != nil:
		return nil, err
	}
	return &Project{Schemas: s, Model: m, importPath: opts.ImportPath}, nil
}

// loadDir loads dir from opts.FS when it is set, else from the disk.
func loadDir(ctx context.Context, dir string, opts Options) (*load.Schemas, error) {
	lopts := load.Options{Resolver: opts.Resolver}
	if opts.FS == nil {
		return load.LoadWith(ctx, dir, lopts)
	}
	fsys, err := fs.Sub(opts.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("schema directory: %w", err)
	}
	return load.LoadFSWith(ctx, fsys, lopts)
}

// Generate compiles the schema directory dir and returns the generated
// files, keyed by file name: [Open] with opts.Go set, then
// [Project.GoFiles]. Errors in the input come back as a load.ErrorList, one
// entry per problem with file and position (relative to dir); nothing is
// returned then.
func Generate(ctx context.Context, dir string, opts Options) (map[string][]byte, error) {
	opts.Go = true
	p, err := Open(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return p.GoFiles()
}

// errNoModel is what the renderers return for a Project whose model did
// not build: Open reported why.
var errNoModel = errors.New("generator: the schema directory's model did not build")

// GoFiles renders the Go package, keyed by file name, and writes nothing.
// It needs a Go package name: open with [Options.Go] to have a missing one
// reported, with its place, among the directory's errors.
//
// When the directory was opened with [Options.ImportPath], the files
// include the package's test kit, in a subdirectory: the key is
// "<package>test/kit.go" (gogen.KitDir, gogen.KitFile). Without an import
// path there is no kit: it imports the package, and only the import path
// says how.
func (p *Project) GoFiles() (map[string][]byte, error) { return gogen.Collect(p.EachGoFile) }

// EachGoFile renders the files GoFiles returns and hands each to each as
// soon as it is rendered (gogen.GenerateEach), so that the caller can
// write it while the others are rendered. each is called from several
// goroutines at once; the error is the package's first, else the kit's.
func (p *Project) EachGoFile(each func(name string, src []byte) error) error {
	if p.Model == nil {
		return errNoModel
	}
	if p.Model.Package == "" {
		return errors.New("generator: no Go package name: the schema directory was opened without Options.Go")
	}
	if p.importPath == "" {
		return gogen.GenerateEach(p.Model, each)
	}
	// The kit is one file as large as the publisher: rendered beside the
	// package's files rather than after them, it does not leave a core
	// idle at the end. Both only read the model.
	var kitErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		kit, err := gogen.Kit(p.Model, p.importPath)
		if err == nil {
			err = each(path.Join(gogen.KitDir(p.Model.Package), gogen.KitFile), kit)
		}
		kitErr = err
	}()
	err := gogen.GenerateEach(p.Model, each)
	<-done
	if err != nil {
		return err
	}
	return kitErr
}

// Docs renders the documentation of the directory, keyed by file name
// (docgen.CatalogueFile: the Markdown catalogue).
func (p *Project) Docs() (map[string][]byte, error) {
	if p.Model == nil {
		return nil, errNoModel
	}
	return docgen.Generate(p.Model, p.Schemas)
}

// AsyncAPI renders the directory as an AsyncAPI 3.0.0 document.
func (p *Project) AsyncAPI(opts asyncapi.Options) ([]byte, error) {
	if p.Model == nil {
		return nil, errNoModel
	}
	return asyncapi.Generate(p.Model, p.Schemas, opts)
}

// Lint returns what is valid but probably wrong in the directory, the
// warnings of `warren check`, with the errors and notes of the same rules
// ([lint.Rules]), sorted by file and position. It works on a Project whose
// model did not build too: a binding that matches nothing fails the model
// and is a finding. Only check prints findings, so they are found on
// request rather than by every Open.
func (p *Project) Lint() []lint.Finding {
	return lint.Run(lint.NewInput(p.Schemas, p.Model))
}
