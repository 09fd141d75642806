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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ManifestFile is the name of the manifest at the top of a schema directory.
const ManifestFile = "warren.json"

// Schemas is a loaded and validated schema directory.
type Schemas struct {
	Dir      string      // the directory as given to Load ("" for LoadFS)
	Manifest *Manifest   // warren.json
	Docs     []*Document // every schema file (not warren.json), sorted by path
	Facts    []*Fact     // the schema files with an x-routing-key, sorted by path

	byPath map[string]*Document
}

// Doc returns the schema file at path (slash-separated, relative to the
// schema directory).
func (s *Schemas) Doc(path string) (*Document, bool) {
	d, ok := s.byPath[path]
	return d, ok
}

// Fact is a schema file with a top-level x-routing-key, with its warren
// keywords read and checked.
type Fact struct {
	Doc         *Document
	RoutingKey  string // x-routing-key: dotted lower-case words, no wildcards
	Title       string // title, "" when absent; names the Go type
	Description string // description, "" when absent
	Version     int    // x-version, 1 when absent
	Deprecated  bool   // deprecated
}

// Path returns the fact's file, relative to the schema directory.
func (f *Fact) Path() string { return f.Doc.Path }

// Load reads the schema directory dir. On failure the error is an
// [ErrorList] when the input is at fault (one entry per problem, each with
// file and position), or another error when the directory cannot be read.
func Load(ctx context.Context, dir string) (*Schemas, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("schema directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("schema directory %s: not a directory", dir)
	}
	s, err := LoadFS(ctx, os.DirFS(dir))
	if s != nil {
		s.Dir = dir
	}
	return s, err
}

// LoadFS is [Load] for a file system (use os.DirFS, fstest.MapFS, embed.FS).
func LoadFS(ctx context.Context, fsys fs.FS) (*Schemas, error) {
	m, err := metas()
	if err != nil {
		return nil, err
	}
	s := &Schemas{byPath: make(map[string]*Document)}
	var errs ErrorList

	// Pass 1: read and parse every file.
	var manifestDoc *Document
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if path.Ext(p) != ".json" || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		doc, err := Parse(p, src)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				errs.Add(e)
				return nil
			}
			return err
		}
		if p == ManifestFile {
			manifestDoc = doc
		} else {
			s.Docs = append(s.Docs, doc)
			s.byPath[p] = doc
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schema directory: %w", err)
	}
	if manifestDoc == nil && !hasErrorIn(errs, ManifestFile) {
		errs.Addf(ManifestFile, "", "missing manifest: expected %s at the top of the schema directory", ManifestFile)
	}

	// Pass 2: the manifest against its meta-schema, then read it.
	if manifestDoc != nil && m.check(manifestDoc, "", manifestDoc.Value, m.manifest, &errs) {
		s.Manifest = readManifest(manifestDoc, &errs)
	}

	// Pass 3: every schema against JSON Schema 2020-12, facts against the
	// fact keywords, every $ref resolved.
	for _, doc := range s.Docs {
		valid := m.check(doc, "", doc.Value, m.draft, &errs)
		if valid {
			s.checkRefs(doc, &errs)
		}
		root, _ := doc.Value.(map[string]any)
		if _, ok := root["x-routing-key"]; !ok {
			continue
		}
		if m.check(doc, "", root, m.fact, &errs) && valid {
			s.Facts = append(s.Facts, readFact(doc, root))
		}
	}
	checkRoutingKeys(s.Facts, &errs)
	if errs.Len() > 0 {
		return nil, errs.Err()
	}
	return s, nil
}

func hasErrorIn(errs ErrorList, file string) bool {
	return slices.ContainsFunc(errs, func(e *Error) bool { return e.File == file })
}

func readFact(doc *Document, root map[string]any) *Fact {
	f := &Fact{Doc: doc, RoutingKey: root["x-routing-key"].(string), Version: 1}
	f.Title, _ = root["title"].(string)
	f.Description, _ = root["description"].(string)
	f.Deprecated, _ = root["deprecated"].(bool)
	if v, ok := root["x-version"].(json.Number); ok {
		n, _ := strconv.Atoi(v.String())
		f.Version = n
	}
	return f
}

// checkRoutingKeys reports two facts that claim one routing key: a consumer
// could not tell them apart.
func checkRoutingKeys(facts []*Fact, errs *ErrorList) {
	seen := make(map[string]*Fact)
	for _, f := range facts {
		if prev, ok := seen[f.RoutingKey]; ok {
			errs.Add(f.Doc.Errorf("/x-routing-key", "routing key %s is already used by %s", strconv.Quote(f.RoutingKey), prev.Doc.Path))
			continue
		}
		seen[f.RoutingKey] = f
	}
}
