package load

import (
	"slices"
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
