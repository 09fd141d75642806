package load

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Import is one entry of the manifest's "imports": another schema
// directory whose facts this one's consumers may bind to. It names either
// a directory relative to this one (a monorepo) or a directory inside a Go
// module that the service's go.mod requires.
type Import struct {
	Pointer string // JSON pointer to the entry in warren.json
	Path    string // a directory relative to the importing one; "" for a module import
	Module  string // a Go module path; "" for a path import
	Dir     string // the schema directory inside Module, slash-separated; "" for its root
	// GoPackage is the import path of the Go package the imported
	// directory is generated into, when its module ships one: generated
	// code then refers to its types instead of declaring its own. ""
	// generates the fact types locally.
	GoPackage string
}

// String names the import as a user wrote it: "../catalogue/events" or
// "github.com/acme/catalogue-events/events".
func (i *Import) String() string {
	if i.Module == "" {
		return i.Path
	}
	if i.Dir == "" {
		return i.Module
	}
	return i.Module + "/" + i.Dir
}

// Resolved is where an import was found.
type Resolved struct {
	FS      fs.FS  // the imported schema directory
	Dir     string // the directory on disk, absolute; relative imports of the imported directory start here
	Module  string // the module the directory belongs to; "" for a path import
	Version string // the module's version as the service's go.mod selects it ("" for a path import)
	Replace string // what a replace directive puts in the module's place ("../catalogue", "example.com/fork@v1.2.0"), "" for none
	// ModuleDir is the root of the module's directory ("" for a path
	// import): where a goPackage inside the module is looked for.
	ModuleDir string
}

// A Resolver finds the schema directory an import names. from is the
// absolute directory of the importing schema directory ("" when it has no
// place on disk). A module import must come out as the version the
// service's go.mod pins: the warren CLI resolves it with the Go toolchain;
// this package never runs it.
type Resolver interface {
	Resolve(ctx context.Context, from string, imp *Import) (Resolved, error)
}

// DirResolver resolves path imports on disk, relative to the importing
// directory, and refuses module imports.
type DirResolver struct{}

// Resolve implements [Resolver].
func (DirResolver) Resolve(ctx context.Context, from string, imp *Import) (Resolved, error) {
	if imp.Module != "" {
		return Resolved{}, fmt.Errorf("import of module %s: module imports are resolved with the Go toolchain; run warren from the command line (or give a load.Resolver that resolves them)", imp.Module)
	}
	return ResolvePath(from, imp.Path)
}

// ResolvePath opens the directory rel relative to from for reading.
func ResolvePath(from, rel string) (Resolved, error) {
	if from == "" {
		return Resolved{}, fmt.Errorf("import %s: a relative import needs the importing directory on disk", strconv.Quote(rel))
	}
	dir := filepath.Join(from, filepath.FromSlash(rel))
	return OpenDir(dir)
}

// OpenDir returns dir as an import: its absolute path and an FS rooted in
// it (an [os.Root], so no link leads out of it).
func OpenDir(dir string) (Resolved, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Resolved{}, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	info, err := os.Stat(abs)
	if err != nil {
		return Resolved{}, err
	}
	if !info.IsDir() {
		return Resolved{}, fmt.Errorf("%s: not a directory", abs)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return Resolved{}, err
	}
	// The root stays open for as long as the files are read; the
	// process ends soon after a generator run.
	return Resolved{FS: root.FS(), Dir: abs}, nil
}

// Imported is one imported directory as loaded.
type Imported struct {
	Import   *Import
	Resolved           // where it was found
	Prefix   string    // the path its files have in this directory's view: "imports/<import>/"
	Schemas  *Schemas  // the imported directory, with its own imports
	Doc      *Document // the importing manifest, for errors
}

// Label names the imported directory for people: "module@version/dir",
// or the relative path.
func (i *Imported) Label() string {
	if i.Import.Module == "" {
		return i.Import.Path
	}
	label := i.Import.Module
	if i.Version != "" {
		label += "@" + i.Version
	}
	if i.Import.Dir != "" {
		label += "/" + i.Import.Dir
	}
	if i.Replace != "" {
		label += " (replaced by " + i.Replace + ")"
	}
	return label
}

// ImportedFacts returns the facts of the directly imported directories
// (not of what they import in turn), in import order.
func (s *Schemas) ImportedFacts() []*Fact {
	var out []*Fact
	for _, imp := range s.Imports {
		out = append(out, imp.Schemas.Facts...)
	}
	return out
}

// ImportOf returns the import that declares fact f, or nil when f is the
// directory's own.
func (s *Schemas) ImportOf(f *Fact) *Imported {
	for _, imp := range s.Imports {
		if strings.HasPrefix(f.Doc.Path, imp.Prefix) {
			return imp
		}
	}
	return nil
}

// importState carries what loading one directory and its imports shares:
// the resolver and the chain of directories being loaded, to catch cycles.
type importState struct {
	resolver Resolver
	chain    []chainLink
}

// chainLink is one directory on the way from the loaded one to an import.
type chainLink struct {
	dir   string // absolute; "" for a file system with no place on disk
	label string // as the importer names it
}

func newImportState(r Resolver, dir string) *importState {
	if r == nil {
		r = DirResolver{}
	}
	return &importState{resolver: r, chain: []chainLink{{dir: dir, label: "this directory"}}}
}

// readImports reads the manifest's "imports" (its types already checked
// against the meta-schema).
func readImports(doc *Document, root map[string]any, errs *ErrorList) []*Import {
	list, _ := root["imports"].([]any)
	var out []*Import
	for i, v := range list {
		obj := v.(map[string]any)
		imp := &Import{Pointer: AppendIndex("/imports", i)}
		imp.Path, _ = obj["path"].(string)
		imp.Module, _ = obj["module"].(string)
		imp.Dir, _ = obj["dir"].(string)
		imp.GoPackage, _ = obj["goPackage"].(string)
		switch {
		case (imp.Path == "") == (imp.Module == ""):
			errs.Add(doc.Errorf(imp.Pointer, "expected exactly one of \"path\" (a directory relative to this one) and \"module\" (a Go module the service requires)"))
			continue
		case imp.Path != "" && imp.Dir != "":
			errs.Add(doc.Errorf(Append(imp.Pointer, "dir"), "\"dir\" goes with \"module\"; a path import names its directory in \"path\""))
			continue
		case imp.Path != "" && (path.IsAbs(imp.Path) || filepath.IsAbs(imp.Path)):
			errs.Add(doc.Errorf(Append(imp.Pointer, "path"), "expected a path relative to this directory, got %s", strconv.Quote(imp.Path)))
			continue
		case imp.Dir != "" && (path.IsAbs(imp.Dir) || path.Clean(imp.Dir) != imp.Dir || strings.HasPrefix(imp.Dir, "..")):
			errs.Add(doc.Errorf(Append(imp.Pointer, "dir"), "expected a clean slash-separated directory inside the module such as \"events\", got %s", strconv.Quote(imp.Dir)))
			continue
		}
		out = append(out, imp)
	}
	return out
}

// loadImports resolves and loads every import of s's manifest.
func (st *importState) loadImports(ctx context.Context, s *Schemas, prefix string, errs *ErrorList) error {
	doc := s.Manifest.Doc
	taken := map[string]*Import{}
	for _, imp := range s.Manifest.Imports {
		here := st.chain[len(st.chain)-1]
		res, err := st.resolver.Resolve(ctx, here.dir, imp)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs.Add(doc.Errorf(imp.Pointer, "import %s: %v", imp, err))
			continue
		}
		if cycle := st.cycle(res.Dir, imp); cycle != "" {
			errs.Add(doc.Errorf(imp.Pointer, "import cycle: %s", cycle))
			continue
		}
		sub := prefix + "imports/" + importPath(imp) + "/"
		if prev, ok := taken[sub]; ok {
			errs.Add(doc.Errorf(imp.Pointer, "import %s: the same directory as %s", imp, where(doc, prev.Pointer)))
			continue
		}
		taken[sub] = imp
		if why := checkGoPackage(imp, res); why != "" {
			errs.Add(doc.Errorf(Append(imp.Pointer, "goPackage"), "goPackage %s: %s", strconv.Quote(imp.GoPackage), why))
		}
		st.chain = append(st.chain, chainLink{dir: res.Dir, label: imp.String()})
		is, err := st.loadFS(ctx, res.FS, sub)
		st.chain = st.chain[:len(st.chain)-1]
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) {
				return fmt.Errorf("import %s: %w", imp, err)
			}
			errs.Add(doc.Errorf(imp.Pointer, "import %s: the imported directory is not valid (its errors follow)", imp))
			for _, e := range list {
				e.File = relocate(e.File, sub, imp, res)
			}
			*errs = append(*errs, list...)
			continue
		}
		s.Imports = append(s.Imports, &Imported{Import: imp, Resolved: res, Prefix: sub, Schemas: is, Doc: doc})
	}
	return nil
}

// where names the place a fact of the import declares its routing key,
// with the file where the user can open it (see relocate).
func (i *Imported) where(f *Fact) string {
	w := where(f.KeyDoc, f.KeyPointer)
	return relocate(f.KeyDoc.Path, i.Prefix, i.Import, i.Resolved) + strings.TrimPrefix(w, f.KeyDoc.Path)
}

// UserPath names a file of the directory's view, in an error, where the
// user can open it: a file of an imported directory ("imports/...") as
// relocate says, any other file as it is.
func (s *Schemas) UserPath(file string) string {
	for _, imp := range s.Imports {
		if strings.HasPrefix(file, imp.Prefix) {
			return relocate(imp.Schemas.UserPath(file), imp.Prefix, imp.Import, imp.Resolved)
		}
	}
	return file
}

// UserPaths rewrites the files of errs with [Schemas.UserPath].
func (s *Schemas) UserPaths(errs ErrorList) {
	for _, e := range errs {
		e.File = s.UserPath(e.File)
	}
}

// relocate names a file of an imported directory, in an error, where the
// user can open it: relative to the importing directory for a path
// import, absolute (in the module cache) for a module.
func relocate(file, sub string, imp *Import, res Resolved) string {
	if path.IsAbs(file) {
		return file // already placed by a nested import
	}
	rel := strings.TrimPrefix(file, sub)
	if imp.Module != "" {
		return filepath.ToSlash(filepath.Join(res.Dir, filepath.FromSlash(rel)))
	}
	return path.Join(filepath.ToSlash(imp.Path), rel)
}

// cycle returns the chain of imports that leads back to dir, or "".
func (st *importState) cycle(dir string, imp *Import) string {
	if dir == "" {
		return ""
	}
	for i, l := range st.chain {
		if l.dir != dir {
			continue
		}
		var steps []string
		for _, l := range st.chain[i:] {
			steps = append(steps, l.label)
		}
		return fmt.Sprintf("%s imports %s, which is %s again", strings.Join(steps, " -> "), imp, st.chain[i].label)
	}
	return ""
}

// importPath is the import as a slash-separated path without "..", for
// the prefix of its files.
func importPath(imp *Import) string {
	if imp.Module != "" {
		return path.Join(imp.Module, imp.Dir)
	}
	var parts []string
	for _, p := range strings.Split(path.Clean(filepath.ToSlash(imp.Path)), "/") {
		if p != ".." && p != "." && p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "parent"
	}
	return strings.Join(parts, "/")
}

// checkImportedKeys reports a routing key that two directly imported
// directories declare, or that an import declares and this directory
// does too, naming both places.
func (s *Schemas) checkImportedKeys(errs *ErrorList) {
	type owner struct {
		fact *Fact
		imp  *Imported // nil: this directory
	}
	seen := map[string]owner{}
	for _, f := range s.Facts {
		seen[f.RoutingKey] = owner{fact: f}
	}
	for _, imp := range s.Imports {
		for _, f := range imp.Schemas.Facts {
			prev, ok := seen[f.RoutingKey]
			if !ok {
				seen[f.RoutingKey] = owner{f, imp}
				continue
			}
			by := "this directory at " + where(prev.fact.KeyDoc, prev.fact.KeyPointer)
			if prev.imp != nil {
				by = fmt.Sprintf("import %s (%s) at %s", prev.imp.Import, where(s.Manifest.Doc, prev.imp.Import.Pointer), prev.imp.where(prev.fact))
			}
			errs.Add(s.Manifest.Doc.Errorf(imp.Import.Pointer, "import %s declares routing key %s at %s, which is also declared by %s: a consumer could not tell them apart", imp.Import, strconv.Quote(f.RoutingKey), imp.where(f), by))
		}
	}
}

// checkGoPackage says what is wrong with the Go package a module import
// reuses when it lies inside the module, "" when nothing is (or it lies
// elsewhere, where only the Go build can find it): it must be a package
// warren generated, so that its types are the imported facts'.
func checkGoPackage(imp *Import, res Resolved) string {
	rel, ok := strings.CutPrefix(imp.GoPackage, imp.Module)
	if imp.GoPackage == "" || imp.Module == "" || res.ModuleDir == "" || !ok || rel != "" && !strings.HasPrefix(rel, "/") {
		return ""
	}
	dir := filepath.Join(res.ModuleDir, filepath.FromSlash(strings.TrimPrefix(rel, "/")))
	src, err := os.ReadFile(filepath.Join(dir, "warren.go"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("module %s has no package generated by warren there (no %s); generate it in the producer's module, or leave goPackage out to generate the fact types here", imp.Module, filepath.Join(dir, "warren.go"))
		}
		return err.Error()
	}
	// The first line of every file warren generates (gogen.GeneratedHeader;
	// gogen imports this package, not the other way round).
	if !strings.HasPrefix(string(src), "// Code generated by warren. DO NOT EDIT.\n") {
		return fmt.Sprintf("%s is not a file warren generated", filepath.Join(dir, "warren.go"))
	}
	return ""
}
