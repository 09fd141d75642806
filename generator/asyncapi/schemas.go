package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// Keywords whose value is a schema, a map of schemas, or an array of
// schemas (JSON Schema 2020-12, plus what older drafts spell otherwise): the
// places a $ref can be. Anything else (enum, const, default, examples,
// x-...) is data and is copied untouched, even if it holds a "$ref" key.
var (
	schemaKeywords    = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemaMapKeywords = []string{"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
	schemaArrKeywords = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"} // items: a tuple before 2020-12
)

// componentSchemas returns the schema files the facts need as entries of
// components.schemas, and the key of each file. A file's key is its path
// made into a name as generated Go files are named (common/money.json ->
// common_money.json); its $refs are rewritten from file paths to
// "#/components/schemas/<key><pointer>". $schema is dropped: the document
// says how schemas are read.
func componentSchemas(m *model.Model) (map[string]any, map[string]string, error) {
	keys := make(map[string]string, len(m.Schemas))
	owner := map[string]string{}
	for _, s := range m.Schemas {
		key := strings.TrimSuffix(names.File(s.Path), ".go")
		if other, dup := owner[key]; dup {
			return nil, nil, fmt.Errorf("schema files %s and %s would both be components.schemas entry %q", other, s.Path, key)
		}
		owner[key] = s.Path
		keys[s.Path] = key
	}
	out := make(map[string]any, len(m.Schemas))
	for _, s := range m.Schemas {
		dec := json.NewDecoder(bytes.NewReader(s.JSON))
		dec.UseNumber() // numbers exactly as written
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.Path, err)
		}
		if root, ok := v.(map[string]any); ok {
			delete(root, "$schema")
		}
		r := rewriter{file: s.Path, keys: keys, refs: s.Refs}
		if err := r.schema(v, ""); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.Path, err)
		}
		out[keys[s.Path]] = v
	}
	return out, keys, nil
}

// rewriter points the $refs of one schema file into the document.
type rewriter struct {
	file string            // the file's path in the schema directory
	keys map[string]string // file path -> components.schemas key
	refs map[string]string // pointer of a schema with $ref -> its target, as load resolved it
}

// schema rewrites the schema v at pointer ptr of the file. $id and id are
// dropped with $schema: inside the document they would change what the
// rewritten references resolve against.
func (r rewriter) schema(v any, ptr string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // true, false
	}
	delete(obj, "$id")
	if _, isURI := obj["id"].(string); isURI {
		delete(obj, "id")
	}
	if s, ok := obj["$ref"].(string); ok {
		to, err := r.ref(s, ptr)
		if err != nil {
			return err
		}
		obj["$ref"] = to
	}
	for _, k := range schemaKeywords {
		if err := r.schema(obj[k], ptr+"/"+k); err != nil {
			return err
		}
	}
	if ptr == "" {
		// A request file's reply schema, a schema in an x- keyword.
		if err := r.schema(obj["x-reply"], "/x-reply"); err != nil {
			return err
		}
	}
	for _, k := range schemaMapKeywords {
		if sub, ok := obj[k].(map[string]any); ok {
			for name, s := range sub {
				if err := r.schema(s, ptr+"/"+k+"/"+escapeToken(name)); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range schemaArrKeywords {
		if sub, ok := obj[k].([]any); ok {
			for i, s := range sub {
				if err := r.schema(s, fmt.Sprintf("%s/%s/%d", ptr, k, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// ref rewrites one reference, which load has already resolved (by path,
// pointer, $id URL or anchor) to a file and a JSON pointer.
func (r rewriter) ref(s, ptr string) (string, error) {
	resolved, ok := r.refs[ptr]
	if !ok {
		return "", fmt.Errorf("$ref %q: not resolved by the loader", s)
	}
	target, frag, _ := strings.Cut(resolved, "#")
	if frag != "" {
		frag = "#" + frag
	}
	key, ok := r.keys[target]
	if !ok {
		return "", fmt.Errorf("$ref %q: %s is not among the schema files", s, target)
	}
	return "#/components/schemas/" + key + strings.TrimPrefix(frag, "#"), nil
}
