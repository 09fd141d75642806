package load

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/internal/suggest"
)

// FileURI is the base URI of a schema file without $id: relative
// references between files resolve against it, as they do in the embedded
// schema set at run time.
func FileURI(path string) string { return "warren:///" + path }

const fileScheme = "warren"

// Resolve finds the target of ref, a $ref written in document from outside
// any subschema with an $id of its own. See [Schemas.ResolveFrom].
func (s *Schemas) Resolve(from *Document, ref string) (Target, error) {
	base := FileURI(from.Path)
	if from.Root != nil {
		base = from.Root.Base
	}
	t, err := s.resolve(base, ref)
	if err != nil {
		return Target{}, err
	}
	return Target{Doc: t.Doc, Pointer: t.Pointer}, nil
}

// ResolveFrom finds the schema that ref, written in schema from, points
// at: by relative path ("../common/money.json"), JSON pointer
// ("#/definitions/money"), $id or id URL (absolute, or relative to the
// nearest enclosing $id), or plain-name anchor ("#money", "$anchor").
// Nothing is fetched: a URL no file of the directory declares is an error
// naming it and the nearest URLs that are declared.
//
// A relative reference that resolves, against the $id it sits under, to a
// URL no file declares is resolved against the file's place in the
// directory instead, as other generators do (see [RefByPath]).
func (s *Schemas) ResolveFrom(from *Schema, ref string) (*Schema, error) {
	t, _, err := s.resolveIn(from, ref)
	return t, err
}

func (s *Schemas) resolve(base, ref string) (*Schema, error) {
	q := strconv.Quote(ref)
	r, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("$ref %s: not a URI reference: %w", q, err)
	}
	b, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("$ref %s: base URI %s: %w", q, strconv.Quote(base), err)
	}
	if b.Scheme == fileScheme && r.Scheme == "" && r.Host == "" && r.Path != "" && !strings.HasPrefix(r.Path, "/") {
		// url.ResolveReference would silently drop the ".." that climbs
		// above the root.
		p := path.Join(path.Dir(strings.TrimPrefix(b.Path, "/")), r.Path)
		if p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("$ref %s: points outside the schema directory", q)
		}
	}
	u := b.ResolveReference(r)
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	resource := u.String()
	res, ok := s.ids[resource]
	if !ok && s.notLoaded(u) {
		return nil, fmt.Errorf("$ref %s: %w", q, errNotLoaded)
	}
	if !ok {
		if p := strings.TrimPrefix(u.Path, "/"); u.Scheme == fileScheme && s.metaFiles[p] {
			return nil, fmt.Errorf("$ref %s: %s is a meta-schema (the manifest's metaSchemas name it), not a schema of the directory", q, p)
		}
		if u.Scheme == fileScheme {
			hint := ""
			if b.Scheme == fileScheme {
				hint = s.closestFile(strings.TrimPrefix(b.Path, "/"), r.Path)
			}
			return nil, fmt.Errorf("$ref %s: no schema file %s in the schema directory%s", q, strconv.Quote(strings.TrimPrefix(u.Path, "/")), hint)
		}
		return nil, &undeclaredError{resource: resource, msg: fmt.Sprintf("$ref %s: no file of the schema directory declares $id %s, and warren never fetches schemas from the network%s", q, strconv.Quote(resource), s.nearestIDs(resource))}
	}
	if frag == "" {
		return res, nil
	}
	if frag[0] != '/' {
		if a, ok := s.ids[resource+"#"+frag]; ok {
			return a, nil
		}
		// A file reached by its path whose root declares an $id: its
		// anchors are declared under that $id (res.Base), as a JSON
		// pointer into it is read from its root.
		if a, ok := s.ids[res.Base+"#"+frag]; ok && res.Base != resource {
			return a, nil
		}
		return nil, fmt.Errorf("$ref %s: %s declares no anchor %s", q, res.Location(), strconv.Quote(frag))
	}
	ptr := res.Pointer + frag
	v, ok := res.Doc.Lookup(ptr)
	if !ok {
		return nil, fmt.Errorf("$ref %s: %s has nothing at %s", q, res.Doc.Path, ptr)
	}
	switch v.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("$ref %s: %s at %s is %s, not a schema", q, res.Doc.Path, ptr, describe(v))
	}
	return res.Doc.schemaAt(ptr, res), nil
}

// nearestIDs names up to three declared $id URLs that share the longest
// prefix with want, for an error: usually a typo or another version.
func (s *Schemas) nearestIDs(want string) string {
	var ids []string
	for id := range s.ids {
		if !strings.HasPrefix(id, fileScheme+":") && !strings.Contains(id, "#") {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return " (no file declares an $id)"
	}
	common := func(a string) int {
		n := 0
		for n < len(a) && n < len(want) && a[n] == want[n] {
			n++
		}
		return n
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(common(b), common(a)), cmp.Compare(a, b)) })
	ids = ids[:min(3, len(ids))]
	for i, id := range ids {
		ids[i] = strconv.Quote(id)
	}
	return "; nearest declared: " + strings.Join(ids, ", ")
}

// schemaAt returns the schema at ptr, reading it if it sits where no
// keyword of its draft holds a schema (a $ref may point anywhere). near is
// a schema of the same resource, whose base it takes.
func (d *Document) schemaAt(ptr string, near *Schema) *Schema {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.nodes[ptr]; ok {
		return n
	}
	v, _ := d.Lookup(ptr)
	n := readSchema(d, near.Draft, ptr, v, near.Base, map[string]*Schema{})
	d.index(n)
	return n
}

// index records n and its subschemas by pointer.
func (d *Document) index(n *Schema) {
	if d.nodes == nil {
		d.nodes = make(map[string]*Schema)
	}
	n.Walk(func(c *Schema) bool {
		if _, ok := d.nodes[c.Pointer]; !ok {
			d.nodes[c.Pointer] = c
		}
		return true
	})
}

// SchemaAt returns the schema node at ptr in the file, or nil when there
// is no schema there.
func (d *Document) SchemaAt(ptr string) *Schema {
	if d.Root == nil {
		return nil
	}
	v, ok := d.Lookup(ptr)
	if !ok {
		return nil
	}
	switch v.(type) {
	case map[string]any, bool:
		return d.schemaAt(ptr, d.Root)
	}
	return nil
}

// resolveRefs resolves every $ref of doc, reporting those that resolve to
// nothing and the dynamic references warren cannot follow, and adding to
// found those resolved by the file's place. It returns the files the refs
// point at, each once, in the order they appear.
func (s *Schemas) resolveRefs(doc *Document, errs *ErrorList, found *[]*RefByPath) []*Document {
	var targets []*Document
	seen := map[*Document]bool{}
	doc.Root.Walk(func(n *Schema) bool {
		for _, kw := range n.Draft.dynamicKeywords() {
			if n.Has(kw) {
				errs.Add(doc.KeyErrorf(Append(n.Pointer, kw), "%s is not supported: its target depends on where the schema is used, and warren maps each schema to one Go type; use $ref", kw))
			}
		}
		if n.RefText == "" {
			return true
		}
		t, byPath, err := s.resolveIn(n, n.RefText)
		if err != nil {
			if !errors.Is(err, errNotLoaded) {
				errs.Add(doc.Errorf(Append(n.Pointer, "$ref"), "%v", err))
			}
			return true
		}
		if byPath != nil {
			*found = append(*found, byPath)
		}
		n.Ref = t
		if !seen[t.Doc] {
			seen[t.Doc] = true
			targets = append(targets, t.Doc)
		}
		return true
	})
	return targets
}

// Referenced returns the schema files that the $refs in doc point at, each
// once, in the order the refs appear (doc itself for a "#/..." ref).
func (s *Schemas) Referenced(doc *Document) []*Document {
	if refs, ok := s.refs[doc]; ok {
		return refs
	}
	for _, imp := range s.Imports {
		if strings.HasPrefix(doc.Path, imp.Prefix) {
			return imp.Schemas.Referenced(doc)
		}
	}
	return nil
}

// IDs returns every absolute URI a schema of the directory declares ($id,
// or id in draft-04), with the location of that schema ("file" or
// "file#pointer"): what the embedded schema set needs to resolve
// references by URI at run time. The URLs of [Schemas.RefsByPath] are
// there too, each with the file it was resolved to, so that the generated
// code resolves those $refs as warren did.
func (s *Schemas) IDs() map[string]string {
	out := map[string]string{}
	for id, n := range s.ids {
		if n.ID == id {
			out[id] = n.Location()
		}
	}
	for _, r := range s.RefsByPath {
		out[r.URL] = r.File
	}
	return out
}

// closestFile suggests, for a $ref to a file that does not exist, the
// reference to an existing file that was probably meant, written as the
// author wrote theirs: relative to the referring file.
func (s *Schemas) closestFile(from, ref string) string {
	dir := path.Dir(from)
	var refs []string
	for p := range s.byPath {
		refs = append(refs, relativeRef(dir, p))
	}
	slices.Sort(refs)
	if c, ok := suggest.Closest(path.Clean(ref), refs); ok {
		return fmt.Sprintf("; did you mean %s?", strconv.Quote(c))
	}
	return ""
}

// relativeRef writes target (a path in the schema directory) relative to
// dir, with ../ where needed, as a $ref in a file of dir would.
func relativeRef(dir, target string) string {
	up := ""
	for d := dir; d != "."; d = path.Dir(d) {
		if rest, ok := strings.CutPrefix(target, d+"/"); ok {
			return up + rest
		}
		up += "../"
	}
	return up + target
}
