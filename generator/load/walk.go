package load

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/internal/suggest"
)

// Keywords whose value is one subschema, a map of subschemas, or an array of
// subschemas (JSON Schema 2020-12, plus "definitions" from older drafts).
var (
	schemaKeywords    = []string{"additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemaMapKeywords = []string{"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
	schemaArrKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// WalkSchemas calls fn for the schema object at pointer inside v and for
// every subschema object below it, parents first, in a fixed order. It knows
// which keywords hold subschemas, so a property that happens to be named
// "$ref" or "type" is never mistaken for a keyword. Boolean schemas are
// skipped (they have nothing to visit). If fn returns false, the walk does
// not descend into that schema.
func WalkSchemas(v any, pointer string, fn func(pointer string, schema map[string]any) bool) {
	obj, ok := v.(map[string]any)
	if !ok || !fn(pointer, obj) {
		return
	}
	for _, kw := range schemaKeywords {
		if sub, ok := obj[kw]; ok {
			WalkSchemas(sub, Append(pointer, kw), fn)
		}
	}
	for _, kw := range schemaMapKeywords {
		m, ok := obj[kw].(map[string]any)
		if !ok {
			continue
		}
		for _, name := range SortedKeys(m) {
			WalkSchemas(m[name], Append(Append(pointer, kw), name), fn)
		}
	}
	for _, kw := range schemaArrKeywords {
		arr, _ := obj[kw].([]any)
		for i, sub := range arr {
			WalkSchemas(sub, AppendIndex(Append(pointer, kw), i), fn)
		}
	}
}

// SortedKeys returns the keys of m in sorted order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Target is what a $ref points at: a document and a JSON pointer inside it.
type Target struct {
	Doc     *Document
	Pointer string
}

// Value returns the schema value the target designates.
func (t Target) Value() any {
	v, _ := t.Doc.Lookup(t.Pointer)
	return v
}

// String renders the target as a reference from the schema directory's
// root, such as "common/money.json#/$defs/currency".
func (t Target) String() string {
	if t.Pointer == "" {
		return t.Doc.Path
	}
	return t.Doc.Path + "#" + t.Pointer
}

// Resolve finds the target of ref, a $ref found in document from. Supported
// forms are "#/json/pointer", "other.json", and "dir/other.json#/pointer",
// with file paths relative to from and inside the schema directory.
// Anchors, $id-based and remote references are not supported and yield an
// error that says so.
func (s *Schemas) Resolve(from *Document, ref string) (Target, error) {
	file, frag, _ := strings.Cut(ref, "#")
	if strings.Contains(file, "://") || strings.HasPrefix(file, "/") || strings.HasPrefix(file, "urn:") {
		return Target{}, fmt.Errorf("$ref %s: only references to files in the schema directory are supported (a relative path such as \"../common/money.json\")", strconv.Quote(ref))
	}
	pointer, err := url.PathUnescape(frag)
	if err != nil {
		return Target{}, fmt.Errorf("$ref %s: bad escape in fragment: %w", strconv.Quote(ref), err)
	}
	if pointer != "" && pointer[0] != '/' {
		return Target{}, fmt.Errorf("$ref %s: anchors are not supported; use a JSON pointer such as \"#/$defs/%s\"", strconv.Quote(ref), pointer)
	}
	doc := from
	if file != "" {
		file, err = url.PathUnescape(file)
		if err != nil {
			return Target{}, fmt.Errorf("$ref %s: bad escape in path: %w", strconv.Quote(ref), err)
		}
		p := path.Join(path.Dir(from.Path), file)
		if p == ".." || strings.HasPrefix(p, "../") {
			return Target{}, fmt.Errorf("$ref %s: points outside the schema directory", strconv.Quote(ref))
		}
		var ok bool
		if doc, ok = s.byPath[p]; !ok {
			return Target{}, fmt.Errorf("$ref %s: no schema file %s in the schema directory%s", strconv.Quote(ref), strconv.Quote(p), s.closestFile(from.Path, file))
		}
	}
	v, ok := doc.Lookup(pointer)
	if !ok {
		return Target{}, fmt.Errorf("$ref %s: %s has nothing at %s", strconv.Quote(ref), doc.Path, pointer)
	}
	switch v.(type) {
	case map[string]any, bool:
	default:
		return Target{}, fmt.Errorf("$ref %s: %s at %s is %s, not a schema", strconv.Quote(ref), doc.Path, pointer, describe(v))
	}
	return Target{Doc: doc, Pointer: pointer}, nil
}

// Referenced returns the schema files that the $refs in doc point at, each
// once, in the order the refs appear (doc itself for a "#/..." ref).
func (s *Schemas) Referenced(doc *Document) []*Document { return s.refs[doc] }

// checkRefs reports every $ref that resolves to nothing and every keyword
// that would make references mean something other than "this file, this
// pointer" ($id, $anchor, $dynamicRef, ...). It returns the files the refs
// that do resolve point at, for [Schemas.Referenced].
func (s *Schemas) checkRefs(doc *Document, errs *ErrorList) []*Document {
	var targets []*Document
	seen := map[*Document]bool{}
	WalkSchemas(doc.Value, "", func(ptr string, sch map[string]any) bool {
		for _, kw := range []string{"$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"} {
			if _, ok := sch[kw]; ok {
				errs.Add(doc.KeyErrorf(Append(ptr, kw), "%s is not supported: warren resolves $ref by file path and JSON pointer", kw))
			}
		}
		if ref, ok := sch["$ref"].(string); ok {
			t, err := s.Resolve(doc, ref)
			switch {
			case err != nil:
				errs.Add(doc.Errorf(Append(ptr, "$ref"), "%v", err))
			case !seen[t.Doc]:
				seen[t.Doc] = true
				targets = append(targets, t.Doc)
			}
		}
		return true
	})
	if root, ok := doc.Value.(map[string]any); ok {
		if v, ok := root["$schema"]; ok && v != draft2020 {
			errs.Add(doc.Errorf("/$schema", "expected %s (warren reads JSON Schema 2020-12), got %s", strconv.Quote(draft2020), describe(v)))
		}
	}
	return targets
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
