package load

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MetaSchema is an entry of the manifest's "metaSchemas": a $schema URL
// other than the JSON Schema drafts', which files of the directory name.
// Registries publish every schema with a meta-schema of their own (Snowplow
// Iglu's self-describing schemas name
// http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#,
// which extends draft-04 with a "self" keyword), and a vendored file is
// never edited; the manifest says what such a URL is.
type MetaSchema struct {
	URL     string // as written in the manifest
	Pointer string // JSON pointer to the entry in warren.json
	// File is the vendored meta-schema the entry names ({"schema": ...}),
	// relative to the schema directory; "" when the entry names a draft.
	File string
	// Draft is the draft the files that name URL are read under: the one
	// the entry names, or the one File extends (its $schema when that
	// names a draft, else the draft meta-schema its allOf/$ref reaches);
	// nil when that could not be worked out (an error says why).
	Draft *Draft
}

// metaURL is the form in which $schema URLs are compared: an empty
// fragment ("...#") names the same resource as none.
func metaURL(u string) string { return strings.TrimSuffix(u, "#") }

// draftNamed finds the draft called name ("draft-04", "2020-12").
func draftNamed(name string) *Draft {
	for _, d := range drafts {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// readMetaSchemas reads the manifest's "metaSchemas", which satisfied the
// manifest's meta-schema.
func readMetaSchemas(doc *Document, root map[string]any, errs *ErrorList) []*MetaSchema {
	decls, _ := root["metaSchemas"].(map[string]any)
	var out []*MetaSchema
	seen := map[string]string{}
	for _, url := range SortedKeys(decls) {
		ms := &MetaSchema{URL: url, Pointer: Pointer("metaSchemas", url)}
		if d, ok := draftOf(url); ok {
			errs.Add(doc.KeyErrorf(ms.Pointer, "%s is the URL of %s, which warren reads without being told: expected the URL of another meta-schema", strconv.Quote(url), d))
			continue
		}
		if prev, ok := seen[metaURL(url)]; ok {
			errs.Add(doc.KeyErrorf(ms.Pointer, "%s names the same meta-schema as %s (an empty fragment is no fragment)", strconv.Quote(url), strconv.Quote(prev)))
			continue
		}
		seen[metaURL(url)] = url
		switch v := decls[url].(type) {
		case string:
			ms.Draft = draftNamed(v)
		case map[string]any:
			ms.File = path.Clean(v["schema"].(string))
		}
		out = append(out, ms)
	}
	return out
}

// customMeta is a meta-schema of the manifest's metaSchemas, ready to
// check the files that name it.
type customMeta struct {
	decl   *MetaSchema
	schema *jsonschema.Schema // the compiled meta-schema file; nil for an entry that names a draft
	broken bool               // its file did not load or compile: files naming it are not checked again
	worked bool               // extendedDraft has looked at it
}

// withCustom returns the meta-schemas for one directory: warren's and the
// drafts', plus those of the manifest's metaSchemas, whose files it reads
// (from fsys, naming them prefix + path), works the draft of out and
// compiles. manifest is nil when warren.json did not load; a $schema that
// names no draft is then not reported, since what it should be is unknown.
func (m *metaSchemas) withCustom(fsys fs.FS, prefix string, manifest *Manifest, paths []string, errs *ErrorList) *metaSchemas {
	lm := *m
	if manifest == nil {
		lm.quiet = true
		return &lm
	}
	if len(manifest.MetaSchemas) == 0 {
		return m
	}
	lm.custom = map[string]*customMeta{}
	lm.metaFiles = map[string]bool{}
	docs := map[*MetaSchema]*Document{}
	for _, ms := range manifest.MetaSchemas {
		cm := &customMeta{decl: ms}
		lm.custom[metaURL(ms.URL)] = cm
		if ms.File == "" {
			continue
		}
		lm.metaFiles[ms.File] = true
		doc, err := readMetaFile(fsys, prefix, ms, manifest.Doc, paths)
		if err != nil {
			errs.Add(err)
			cm.broken = true
			continue
		}
		docs[ms] = doc
	}
	for _, ms := range lm.sortedDecls() {
		if docs[ms] != nil && lm.extendedDraft(ms, docs, map[*MetaSchema]bool{}, errs) == nil {
			lm.custom[metaURL(ms.URL)].broken = true
		}
	}
	lm.compileCustom(docs, errs)
	return &lm
}

// readMetaFile reads and parses the meta-schema file an entry names.
func readMetaFile(fsys fs.FS, prefix string, ms *MetaSchema, manifest *Document, paths []string) (*Document, *Error) {
	at := Append(ms.Pointer, "schema")
	known := false
	for _, p := range paths {
		known = known || p == ms.File
	}
	if !known || ms.File == ManifestFile {
		return nil, manifest.Errorf(at, "expected a JSON file of the schema directory, got %s (no such file)", strconv.Quote(ms.File))
	}
	src, err := fs.ReadFile(fsys, ms.File)
	if err != nil {
		return nil, manifest.Errorf(at, "read %s: %v", ms.File, err)
	}
	doc, err := Parse(prefix+ms.File, src)
	var perr *Error
	if errors.As(err, &perr) {
		return nil, perr
	}
	if _, ok := doc.Value.(map[string]any); !ok {
		e := doc.Errorf("", "expected a meta-schema (an object), got %s", describe(doc.Value))
		e.Root = true
		return nil, e
	}
	return doc, nil
}

// extendedDraft works out, once, the draft the meta-schema file of ms
// extends and sets ms.Draft: the draft its $schema names, or the one its
// $schema's own meta-schema (of the manifest) extends, or else the draft
// meta-schema its $ref, and the $refs of its allOf, reach. visiting guards
// against meta-schemas that extend each other.
func (m *metaSchemas) extendedDraft(ms *MetaSchema, docs map[*MetaSchema]*Document, visiting map[*MetaSchema]bool, errs *ErrorList) *Draft {
	cm := m.custom[metaURL(ms.URL)]
	if ms.Draft != nil || docs[ms] == nil || visiting[ms] || cm.worked {
		return ms.Draft
	}
	visiting[ms] = true
	defer delete(visiting, ms)
	cm.worked = true
	ms.Draft = m.workDraft(ms, docs[ms], docs, visiting, errs)
	return ms.Draft
}

// workDraft is extendedDraft's reading of the meta-schema file doc.
func (m *metaSchemas) workDraft(ms *MetaSchema, doc *Document, docs map[*MetaSchema]*Document, visiting map[*MetaSchema]bool, errs *ErrorList) *Draft {
	root := doc.Value.(map[string]any)
	if s, ok := root["$schema"].(string); ok {
		if d, ok := draftOf(s); ok {
			return d
		}
		if other := m.custom[metaURL(s)]; other != nil && other.decl != ms {
			if d := m.extendedDraft(other.decl, docs, visiting, errs); d != nil {
				return d
			}
		}
	}
	type reach struct {
		draft *Draft
		at    string
	}
	var reached []reach
	seen := map[string]bool{}
	var walk func(ptr string)
	walk = func(ptr string) {
		obj, ok := Lookup(doc.Value, ptr)
		schema, isObj := obj.(map[string]any)
		if !ok || !isObj || seen[ptr] {
			return
		}
		seen[ptr] = true
		if ref, ok := schema["$ref"].(string); ok {
			switch d, known := draftOf(strings.SplitN(ref, "#", 2)[0]); {
			case known:
				reached = append(reached, reach{d, Append(ptr, "$ref")})
			case strings.HasPrefix(ref, "#/") || ref == "#":
				walk(ref[1:])
			case m.custom[metaURL(ref)] != nil:
				if d := m.extendedDraft(m.custom[metaURL(ref)].decl, docs, visiting, errs); d != nil {
					reached = append(reached, reach{d, Append(ptr, "$ref")})
				}
			}
		}
		all, _ := schema["allOf"].([]any)
		for i := range all {
			walk(AppendIndex(Append(ptr, "allOf"), i))
		}
	}
	walk("")
	distinct := map[*Draft]bool{}
	var names []string
	for _, r := range reached {
		if !distinct[r.draft] {
			distinct[r.draft] = true
			names = append(names, fmt.Sprintf("%s (at %s)", r.draft, r.at))
		}
	}
	switch len(distinct) {
	case 1:
		return reached[0].draft
	case 0:
		at := ""
		if _, ok := root["$schema"]; ok {
			at = "/$schema"
		}
		errs.Add(doc.Errorf(at, "meta-schema %s: expected its $schema, or a $ref of its allOf, to name one of %s, so that warren knows the draft of the files that name it; or name the draft in warren.json: \"metaSchemas\": {%s: \"draft-04\"}", strconv.Quote(ms.URL), knownDrafts(), strconv.Quote(ms.URL)))
	default:
		errs.Add(doc.Errorf("", "meta-schema %s extends %s: expected one draft, which the files that name it are read under", strconv.Quote(ms.URL), strings.Join(names, " and ")))
	}
	return nil
}

// compileCustom compiles the meta-schema files whose draft is known. The
// validator reads a schema by the draft its $schema names, and a
// meta-schema's $schema is often its own URL (Iglu's is), so each is
// compiled from a copy whose $schema names the draft it extends. $refs
// between them resolve; nothing is fetched.
func (m *metaSchemas) compileCustom(docs map[*MetaSchema]*Document, errs *ErrorList) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseRegexpEngine(metaRegexp) // patterns are ECMA-262, as everywhere else
	c.UseLoader(noFetch{})
	var order []*MetaSchema
	for _, ms := range m.sortedDecls() {
		doc := docs[ms]
		if doc == nil || ms.Draft == nil {
			continue
		}
		copied := map[string]any{}
		for k, v := range doc.Value.(map[string]any) {
			copied[k] = v
		}
		copied["$schema"] = ms.Draft.URL
		if err := c.AddResource(metaURL(ms.URL), copied); err != nil {
			errs.Add(doc.Errorf("", "meta-schema %s: %v", strconv.Quote(ms.URL), err))
			m.custom[metaURL(ms.URL)].broken = true
			continue
		}
		order = append(order, ms)
	}
	for _, ms := range order {
		cm := m.custom[metaURL(ms.URL)]
		sch, err := c.Compile(metaURL(ms.URL))
		var invalid *jsonschema.SchemaValidationError
		switch {
		case errors.As(err, &invalid):
			// The meta-schema is not a valid schema of its draft: say
			// where, as for any schema file.
			d := docs[ms]
			d.Draft = ms.Draft // for what the errors say of its keywords
			m.report(d, "", d.Value, invalid.Err, errs)
			cm.broken = true
		case err != nil:
			errs.Add(docs[ms].Errorf("", "meta-schema %s: %v", strconv.Quote(ms.URL), err))
			cm.broken = true
		default:
			cm.schema = sch
		}
	}
}

// sortedDecls returns the custom meta-schemas by URL.
func (m *metaSchemas) sortedDecls() []*MetaSchema {
	var out []*MetaSchema
	for _, u := range SortedKeys(m.custom) {
		out = append(out, m.custom[u].decl)
	}
	return out
}

// noFetch refuses every URL the validator does not hold: warren never
// fetches a schema, and never reads a file outside the directory.
type noFetch struct{}

func (noFetch) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is neither a JSON Schema draft nor a meta-schema of the manifest's metaSchemas, and warren never fetches schemas", url)
}

// readDraft sets the draft of the schema file doc from its $schema: a
// draft's URL, or one of the manifest's metaSchemas, whose compiled
// meta-schema it returns (nil for a draft, or an entry that names one). It
// reports false, having said why in errs where that is news, when the file
// cannot be read.
func (m *metaSchemas) readDraft(doc *Document, root map[string]any, errs *ErrorList) (*jsonschema.Schema, bool) {
	doc.Draft = DefaultDraft
	v, ok := root["$schema"]
	if !ok {
		return nil, true
	}
	s, isString := v.(string)
	if d, known := draftOf(s); isString && known {
		doc.Draft = d
		return nil, true
	}
	if cm := m.custom[metaURL(s)]; isString && cm != nil {
		if cm.broken || cm.decl.Draft == nil {
			return nil, false // the meta-schema's own errors say what is wrong
		}
		doc.Draft, doc.MetaSchema = cm.decl.Draft, cm.decl.URL
		return cm.schema, true
	}
	if m.quiet {
		return nil, false // the manifest did not load: its metaSchemas may well name it
	}
	errs.Add(doc.Errorf("/$schema", "expected one of %s (the JSON Schema drafts warren reads), or a meta-schema the manifest's metaSchemas declares, got %s", knownDrafts(), describe(v)))
	return nil, false
}

// DraftSource returns the file's text as the generated code embeds it: as
// written, except that a $schema naming one of the manifest's metaSchemas
// names the draft the file is read under instead. The generated code's
// validator knows only the drafts, and fetches nothing; payloads validate
// the same, since a meta-schema constrains schemas, not the values they
// describe (warren has checked the file against it already).
func (d *Document) DraftSource() []byte {
	start := d.Offset("/$schema")
	if d.MetaSchema == "" || start < 0 || start >= len(d.Src) || d.Src[start] != '"' {
		return d.Src
	}
	end := start + 1
	for end < len(d.Src) && d.Src[end] != '"' {
		if d.Src[end] == '\\' {
			end++
		}
		end++
	}
	out := make([]byte, 0, len(d.Src))
	out = append(out, d.Src[:start]...)
	out = strconv.AppendQuote(out, d.Draft.URL)
	return append(out, d.Src[min(end+1, len(d.Src)):]...)
}

// customOf says, for an error, which meta-schema of metaSchemas the
// keyword at schemaURL belongs to ("" for the drafts' and warren's own):
// the user did not write that rule, and may not know where it is.
func (m *metaSchemas) customOf(schemaURL string) string {
	url, _, _ := strings.Cut(schemaURL, "#")
	if cm := m.custom[url]; cm != nil && cm.decl.File != "" {
		return "from the meta-schema " + cm.decl.File
	}
	return ""
}
