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
// keyword of its draft holds a schema: the manifest's facts, and any $ref,
// may point anywhere (an OpenAPI document's #/components/schemas/Money).
// near is a schema of the same resource, whose base it takes. A schema
// read so is the root of a tree of its own (see [Document.Roots]), which
// the loader checks against its draft and whose $refs it resolves
// (settleDetached), as it does a file's root.
func (d *Document) schemaAt(ptr string, near *Schema) *Schema {
	return d.readAt(ptr, near, true)
}

// readAt is schemaAt; detached says whether a schema it reads is recorded
// as a root of its own. x-reply is not: the request it belongs to checks
// and resolves it.
func (d *Document) readAt(ptr string, near *Schema, detached bool) *Schema {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.nodes[ptr]; ok {
		return n
	}
	v, _ := d.Lookup(ptr)
	n := readSchema(d, near.Draft, ptr, v, near.Base, map[string]*Schema{})
	d.index(n)
	if detached {
		if len(d.detached) > 0 {
			// A root read before that the new tree holds (readSchema took
			// it in as it is) is a root no more.
			held := map[*Schema]bool{}
			n.Walk(func(c *Schema) bool { held[c] = true; return true })
			d.detached = slices.DeleteFunc(d.detached, func(r *Schema) bool { return held[r] })
		}
		d.detached = append(d.detached, n)
	}
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
// is no schema there. A place the loader did not read (no keyword holds
// it, and nothing of the directory points at it) is read for the caller
// alone: it is not one of the file's [Document.Roots].
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
		d.mu.Lock()
		defer d.mu.Unlock()
		if n, ok := d.nodes[ptr]; ok {
			return n
		}
		return readSchema(d, d.Root.Draft, ptr, v, d.Root.Base, map[string]*Schema{})
	}
	return nil
}

// Roots returns the trees of schemas the file holds that warren uses: its
// root, then, in file order, every schema read where no keyword of the
// file's draft holds one because the manifest's facts or a $ref point
// there (#/components/schemas/Money of an OpenAPI document), with what
// they hold. Every schema of the file that a fact reaches is in one of
// them; a request's x-reply is not (see [Request]). nil when the file did
// not load.
func (d *Document) Roots() []*Schema {
	if d.Root == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Schema, 0, 1+len(d.detached))
	out = append(out, d.Root)
	out = append(out, d.detached...)
	slices.SortFunc(out[1:], func(a, b *Schema) int {
		return cmp.Or(cmp.Compare(d.Offset(a.Pointer), d.Offset(b.Pointer)), cmp.Compare(a.Pointer, b.Pointer))
	})
	return out
}

// resolveRefs resolves every $ref of doc, reporting those that resolve to
// nothing and the dynamic references warren cannot follow, and adding to
// found those resolved by the file's place. It returns the files the refs
// point at, each once, in the order they appear.
func (s *Schemas) resolveRefs(doc *Document, errs *ErrorList, found *[]*RefByPath) []*Document {
	var targets []*Document
	seen := map[*Document]bool{}
	s.resolveTree(doc.Root, errs, found, func(t *Document) {
		if !seen[t] {
			seen[t] = true
			targets = append(targets, t)
		}
	})
	return targets
}

// resolveTree resolves the $ref of every schema of the tree at root that
// is not settled yet, reporting those that resolve to nothing and the
// dynamic references warren cannot follow, adding to found those resolved
// by the file's place, and calling reached with the file each ref points
// at. It returns the places of the settled schemas it found in the tree
// (a tree read before, which the one at root holds), where it did not go.
func (s *Schemas) resolveTree(root *Schema, errs *ErrorList, found *[]*RefByPath, reached func(*Document)) (settled []string) {
	root.Walk(func(n *Schema) bool {
		if n.settled {
			settled = append(settled, n.Pointer)
			return false
		}
		n.settled = true
		for _, kw := range n.Draft.dynamicKeywords() {
			if n.Has(kw) {
				errs.Add(n.Doc.KeyErrorf(Append(n.Pointer, kw), "%s is not supported: its target depends on where the schema is used, and warren maps each schema to one Go type; use $ref", kw))
			}
		}
		if n.RefText == "" {
			return true
		}
		t, byPath, err := s.resolveIn(n, n.RefText)
		if err != nil {
			if !errors.Is(err, errNotLoaded) {
				errs.Add(n.Doc.Errorf(Append(n.Pointer, "$ref"), "%v", err))
			}
			return true
		}
		if byPath != nil {
			*found = append(*found, byPath)
		}
		n.Ref = t
		reached(t.Doc)
		return true
	})
	return settled
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
