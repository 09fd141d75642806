// Package load reads a warren schema directory: the manifest warren.json and
// every JSON Schema file below it. It keeps each file's parsed JSON with the
// position of every value, validates the manifest and the fact keywords
// against warren's meta-schemas (package [schemas]) and every schema against
// JSON Schema 2020-12, and checks that every $ref resolves.
//
// Everything it reports is an [*Error] naming file, line:column and JSON
// pointer; [Load] collects all of them into an [ErrorList]. The result,
// [*Schemas], is the input of the model builder and of the linter and
// differ: it answers "which facts are there", "what does this $ref point
// at" and "where in which file is this".
package load

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ManifestFile is the name of the manifest at the top of a schema directory.
const ManifestFile = "warren.json"

// Schemas is a loaded and validated schema directory.
type Schemas struct {
	Dir      string      // the directory as given to Load ("" for LoadFS)
	Manifest *Manifest   // warren.json
	Docs     []*Document // every schema file (not warren.json), sorted by path
	Facts    []*Fact     // x-routing-key files, then the manifest's facts, each sorted
	Requests []*Request  // the schema files with an x-request, sorted by path
	// Imports are the directories the manifest's "imports" name, each
	// loaded with its own imports, in manifest order. Their facts are not
	// in Facts: see [Schemas.ImportedFacts].
	Imports []*Imported
	// RefsByPath are the relative $refs that no file's $id answers, and
	// that were resolved against their file's place in the directory
	// instead, sorted by file and position; `warren check` warns about
	// each (rule ref-resolved-by-path).
	RefsByPath []*RefByPath

	byPath map[string]*Document
	refs   map[*Document][]*Document // the files each file's $refs point at
	ids    map[string]*Schema        // every file's URI, $id and anchor -> its schema
	failed map[string][]byte         // the schema files that did not load -> their text
	// metaFiles are the meta-schema files of the manifest's metaSchemas,
	// which are not schemas of the directory.
	metaFiles map[string]bool
}

// Doc returns the schema file at path (slash-separated, relative to the
// schema directory).
// The files of an imported directory are found under their import's
// prefix ("imports/<import>/...").
func (s *Schemas) Doc(path string) (*Document, bool) {
	if d, ok := s.byPath[path]; ok {
		return d, true
	}
	for _, imp := range s.Imports {
		if strings.HasPrefix(path, imp.Prefix) {
			return imp.Schemas.Doc(path)
		}
	}
	return nil, false
}

// Load reads the schema directory dir on disk: [LoadFS] over an [os.Root]
// of dir, so no file outside dir is ever opened. On failure the error is an
// [ErrorList] when the input is at fault (one entry per problem, each with
// file and position), or another error when the directory cannot be read.
//
// When every problem is a value of warren.json that could be read around
// (see readaround.go; a schema file, a $ref or a fact at fault never
// qualifies), Load returns the Schemas together with the ErrorList, as
// go/parser returns what it could parse: the manifest without those
// values, so that the checks that follow the loader still run, and a run
// reports every problem at once. What they find at or below a place of
// the list is the same problem again: see [ErrorList.WithoutFollowOns].
// Anything else that needs a valid directory stops at the error.
func Load(ctx context.Context, dir string) (*Schemas, error) {
	return LoadWith(ctx, dir, Options{})
}

// Options adjust how a schema directory is loaded.
type Options struct {
	// Resolver finds the directories the manifest's "imports" name. nil
	// resolves relative paths on disk ([DirResolver]) and refuses module
	// imports, which need the Go toolchain.
	Resolver Resolver
}

// LoadWith is [Load] with options: imports are resolved by opts.Resolver.
func LoadWith(ctx context.Context, dir string, opts Options) (*Schemas, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("schema directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("schema directory %s: not a directory", dir)
	}
	// An os.Root refuses, on every open, a path that leaves dir.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("schema directory: %w", err)
	}
	defer root.Close()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("schema directory: %w", err)
	}
	st := newImportState(opts.Resolver, abs)
	s, err := st.loadFS(ctx, root.FS(), "")
	if s != nil {
		s.Dir = dir
	}
	return s, err
}

// LoadFS is [Load] for a schema directory held in a file system: a git
// revision's tree, an embed.FS, an fstest.MapFS. Paths in errors and in
// the result are relative to the root of fsys.
//
// A symbolic link below the root that leads outside it, or to a directory,
// is an error naming the link (if fsys implements [fs.ReadLinkFS], as
// os.DirFS and fstest.MapFS do; other file systems resolve links
// themselves). For a directory on disk, prefer [Load], or pass an
// [os.Root]'s FS: os.DirFS follows a link that changes after the check.
func LoadFS(ctx context.Context, fsys fs.FS) (*Schemas, error) {
	return LoadFSWith(ctx, fsys, Options{})
}

// LoadFSWith is [LoadFS] with options. A file system has no place on
// disk, so relative imports are resolved by opts.Resolver alone (nil
// refuses them).
func LoadFSWith(ctx context.Context, fsys fs.FS, opts Options) (*Schemas, error) {
	return newImportState(opts.Resolver, "").loadFS(ctx, fsys, "")
}

// loadFS loads the directory held in fsys, naming every file prefix +
// its path (prefix is "" for the directory itself, "imports/..." for an
// imported one, so that imported files never share a path with the
// importer's).
func (st *importState) loadFS(ctx context.Context, fsys fs.FS, prefix string) (*Schemas, error) {
	// The meta-schemas are compiled (the first time in a process) while
	// the directory is listed, which is mostly waiting on system calls.
	var m *metaSchemas
	var metaErr error
	compiled := make(chan struct{})
	go func() {
		defer close(compiled)
		m, metaErr = metas()
	}()
	paths, bad, err := jsonFiles(ctx, fsys)
	<-compiled
	if metaErr != nil {
		return nil, metaErr
	}
	if err != nil {
		return nil, fmt.Errorf("read schema directory: %w", err)
	}
	if bad.Len() > 0 {
		// Nothing is read until every link is known to stay inside.
		for _, e := range bad {
			e.File = prefix + e.File
		}
		return nil, bad.Err()
	}

	// The manifest first: its metaSchemas say how to read the files
	// whose $schema names no draft.
	files := make([]fileResult, len(paths))
	var manifest *Manifest
	if i := slices.Index(paths, ManifestFile); i >= 0 {
		if err := files[i].load(fsys, paths[i], prefix, m); err != nil {
			return nil, err
		}
		manifest = files[i].manifest
	}
	var metaErrs ErrorList
	m = m.withCustom(fsys, prefix, manifest, paths, &metaErrs)

	// Pass 1, on every core: read, parse and check each schema file on
	// its own (against the meta-schema of its draft, or the one of the
	// manifest's metaSchemas it names, and, for a fact, the fact
	// keywords). The meta-schema files of metaSchemas are not schemas of
	// the directory.
	if err := forEach(ctx, len(paths), func(i int) error {
		if paths[i] == ManifestFile || m.metaFiles[paths[i]] {
			return nil
		}
		return files[i].load(fsys, paths[i], prefix, m)
	}); err != nil {
		return nil, err
	}

	// Pass 2: put the directory together; what spans files is checked here:
	// every $ref resolves, no two facts share a routing key.
	s, errs := assemble(files, prefix)
	errs = append(errs, metaErrs...)
	s.metaFiles = m.metaFiles
	// Resolving refs only reads what pass 1 built: on every core again.
	refErrs := make([]ErrorList, len(files))
	refs := make([][]*Document, len(files))
	byPath := make([][]*RefByPath, len(files))
	if err := forEach(ctx, len(files), func(i int) error {
		if f := files[i]; f.valid && f.doc != nil && f.doc.Root != nil {
			refs[i] = s.resolveRefs(f.doc, &refErrs[i], &byPath[i])
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for i, f := range files {
		errs = append(errs, refErrs[i]...)
		s.RefsByPath = append(s.RefsByPath, byPath[i]...)
		if refs[i] != nil {
			s.refs[f.doc] = refs[i]
		}
		if f.fact != nil {
			f.fact.Schema = f.doc.Root
			s.Facts = append(s.Facts, f.fact)
		}
		if f.request != nil {
			s.addRequest(f.request, &errs)
		}
	}
	if s.Manifest != nil {
		s.Facts = append(s.Facts, s.manifestFacts(&errs)...)
		s.Manifest.Sagas = s.readSagas(&errs)
		if err := st.loadImports(ctx, s, prefix, &errs); err != nil {
			return nil, err
		}
	}
	s.settleDetached(m, &errs)
	s.checkRefsByPath(&errs)
	s.Facts = groupVersions(s.Facts, &errs)
	s.checkManifestVersions(&errs)
	s.checkImportedKeys(&errs)
	s.checkRequests(&errs)
	if errs.Len() > 0 {
		if readAroundOnly(files, paths, errs) {
			return s, errs.Err()
		}
		return nil, errs.Err()
	}
	return s, nil
}

// readAroundOnly reports whether every error of errs is one of the
// manifest's that its reading left out (see readAround and readManifest):
// then the rest of the directory is whole, and the checks after the
// loader can run on it.
func readAroundOnly(files []fileResult, paths []string, errs ErrorList) bool {
	i := slices.Index(paths, ManifestFile)
	if i < 0 || files[i].manifest == nil || len(files[i].errs) != errs.Len() {
		return false
	}
	for _, e := range files[i].errs {
		if !readableAround(e.Pointer) {
			return false
		}
	}
	return true
}

// assemble puts the files of pass 1 together: the manifest, the schema
// files by path, every URI they declare.
func assemble(files []fileResult, prefix string) (*Schemas, ErrorList) {
	s := &Schemas{byPath: make(map[string]*Document), refs: make(map[*Document][]*Document), ids: make(map[string]*Schema)}
	var errs ErrorList
	var manifestDoc *Document
	for _, f := range files {
		errs = append(errs, f.errs...)
		switch {
		case f.doc == nil: // did not parse, or not a schema file (see loadFS)
		case f.doc.Path == prefix+ManifestFile:
			manifestDoc = f.doc
			s.Manifest = f.manifest
		default:
			s.Docs = append(s.Docs, f.doc)
			s.byPath[f.doc.Path] = f.doc
		}
	}
	s.indexIDs(files, &errs)
	s.recordFailed(files, prefix+ManifestFile)
	if manifestDoc == nil && !hasErrorIn(errs, prefix+ManifestFile) {
		errs.Addf(prefix+ManifestFile, "", "missing manifest: expected %s at the top of the schema directory", ManifestFile)
	}
	return s, errs
}

// fileResult is what pass 1 learns about one file.
type fileResult struct {
	path     string // as named in the directory (prefix included)
	src      []byte
	doc      *Document
	valid    bool               // the file is a valid JSON Schema (or manifest)
	ids      map[string]*Schema // the URIs and anchors the file declares
	manifest *Manifest          // set for warren.json when it is valid
	fact     *Fact              // set for a valid fact
	request  *Request           // set for a valid request
	errs     ErrorList
}

func (r *fileResult) load(fsys fs.FS, p, prefix string, m *metaSchemas) error {
	src, err := fs.ReadFile(fsys, p)
	if err != nil {
		return fmt.Errorf("read schema directory: %w", err)
	}
	isManifest := p == ManifestFile
	p = prefix + p
	r.path, r.src = p, src
	doc, err := Parse(p, src)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		r.errs.Add(e)
		return nil
	}
	r.doc = doc
	if isManifest {
		root, ok := doc.Value.(map[string]any)
		if r.valid = m.check(doc, "", doc.Value, m.manifest, &r.errs); !r.valid {
			root, ok = m.readAround(doc, r.errs)
		}
		if ok {
			r.manifest = readManifest(doc, root, &r.errs)
		}
		return nil
	}
	root, _ := doc.Value.(map[string]any)
	custom, ok := m.readDraft(doc, root, &r.errs)
	if !ok {
		return nil
	}
	// Each file is checked against its own draft's meta-schema, and
	// against the meta-schema of metaSchemas it names (which usually
	// includes its draft's: what both report is reported once). For
	// 2020-12 a quick check settles the common case; the meta-schema
	// decides (and explains) the rest.
	customValid := custom == nil || m.check(doc, "", doc.Value, custom, &r.errs)
	draftValid := doc.Draft == Draft2020 && surelyDraftValid(doc.Value) || m.check(doc, "", doc.Value, m.drafts[doc.Draft], &r.errs)
	keysValid := patternKeysValid(doc, &r.errs)
	r.valid = customValid && draftValid && keysValid
	if r.valid {
		r.ids = map[string]*Schema{}
		doc.Root = readSchema(doc, doc.Draft, "", doc.Value, FileURI(p), r.ids)
		r.ids[FileURI(p)] = doc.Root
		doc.index(doc.Root)
	}
	if _, ok := root["x-routing-key"]; ok && m.check(doc, "", root, m.fact, &r.errs) && r.valid {
		r.fact = readFact(doc, root)
	}
	if _, ok := root["x-request"]; ok && m.check(doc, "", root, m.request, &r.errs) && r.valid {
		r.request = readRequest(doc, root, m, &r.errs)
	}
	return nil
}

// forEach calls fn(0..n-1) on every core and returns the first error.
func forEach(ctx context.Context, n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make([]error, n)
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// indexIDs gathers the URIs every file declares. One URI declared twice
// would make a $ref to it ambiguous.
func (s *Schemas) indexIDs(files []fileResult, errs *ErrorList) {
	for _, f := range files {
		for _, id := range SortedKeys(f.ids) {
			n := f.ids[id]
			if prev, ok := s.ids[id]; ok && prev != n {
				what, kw := "$id", n.Draft.idKeyword()
				if strings.Contains(id, "#") {
					what, kw = "anchor", "$anchor"
					if n.Draft.anchorKeyword() == "" {
						kw = n.Draft.idKeyword()
					}
				}
				if !n.Has(kw) && n.Draft.Version >= 2020 {
					kw = "$dynamicAnchor"
				}
				errs.Add(n.Doc.Errorf(Append(n.Pointer, kw), "%s %s is already declared by %s", what, strconv.Quote(id), prev.Location()))
				continue
			}
			s.ids[id] = n
		}
	}
}

func hasErrorIn(errs ErrorList, file string) bool {
	return slices.ContainsFunc(errs, func(e *Error) bool { return e.File == file })
}
