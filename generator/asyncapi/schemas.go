package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// componentSchemas returns the schema files the facts need as entries of
// components.schemas, and the key of each file. A file's key is its path
// made into a name as generated Go files are named (common/money.json ->
// common_money.json).
//
// AsyncAPI 3.0's default schema format is a superset of JSON Schema
// draft-07, while a schema directory may hold any draft from 04 to
// 2020-12. Each schema is therefore written in draft-07 terms, keeping
// what it accepts:
//   - every $ref, however it was written (relative path, pointer, $id URL,
//     anchor), points at its target inside the document, as load resolved
//     it: "#/components/schemas/<key><pointer>";
//   - $schema, $id, id (draft-04), $anchor are dropped: with the references
//     rewritten they have nothing left to do, and an $id would change the
//     base the rewritten references resolve against;
//   - draft-04's boolean exclusiveMinimum/exclusiveMaximum become the
//     numbers draft-06 and later use;
//   - from 2019-09 on, $ref applies next to other keywords; there it moves
//     into an allOf, since draft-07 ignores a $ref's siblings;
//   - 2020-12's prefixItems and items become draft-07's items (an array)
//     and additionalItems.
//
// Keywords draft-07 does not know (dependentRequired, unevaluatedProperties,
// ...) are carried as they are; AsyncAPI tools ignore them.
func componentSchemas(m *model.Model, s *load.Schemas) (map[string]any, map[string]string, error) {
	keys := make(map[string]string, len(m.Schemas))
	owner := map[string]string{}
	for _, sc := range m.Schemas {
		key := strings.TrimSuffix(names.File(sc.Path), ".go")
		if other, dup := owner[key]; dup {
			return nil, nil, fmt.Errorf("schema files %s and %s would both be components.schemas entry %q", other, sc.Path, key)
		}
		owner[key] = sc.Path
		keys[sc.Path] = key
	}
	out := make(map[string]any, len(m.Schemas))
	var roots []*load.Schema
	for _, sc := range m.Schemas {
		doc, ok := s.Doc(sc.Path)
		if !ok || doc.Root == nil {
			return nil, nil, fmt.Errorf("%s: not among the loaded schema files", sc.Path)
		}
		dec := json.NewDecoder(bytes.NewReader(doc.Src))
		dec.UseNumber() // numbers exactly as written
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sc.Path, err)
		}
		out[keys[sc.Path]] = v
		// The schemas read where no keyword holds one (a fact's
		// #/components/schemas/PaymentCaptured) are roots too.
		roots = append(roots, doc.Roots()...)
	}
	// Every schema object, found from the roots and, for a $ref to a
	// place no keyword holds, from its target too. All are looked up
	// before any is changed, since the changes move subtrees.
	type site struct {
		schema *load.Schema
		obj    map[string]any
	}
	var sites []site
	seen := map[*load.Schema]bool{}
	var visit func(*load.Schema) bool
	visit = func(sc *load.Schema) bool {
		if seen[sc] {
			return false
		}
		seen[sc] = true
		if obj, ok := lookup(out[keys[sc.Doc.Path]], sc.Pointer).(map[string]any); ok && sc.Keywords != nil {
			sites = append(sites, site{sc, obj})
		}
		if sc.Ref != nil {
			sc.Ref.Walk(visit)
		}
		return true
	}
	// A request's reply sits under x-reply, which no JSON Schema keyword
	// holds, so it is a root of its own.
	for _, r := range s.Requests {
		if r.Reply != nil {
			roots = append(roots, r.Reply)
		}
	}
	for _, r := range roots {
		r.Walk(visit)
	}
	for _, st := range sites {
		if err := toDraft7(st.schema, st.obj, keys); err != nil {
			return nil, nil, err
		}
	}
	return out, keys, nil
}

func toDraft7(sc *load.Schema, obj map[string]any, keys map[string]string) error {
	for _, k := range []string{"$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$comment"} {
		delete(obj, k)
	}
	if sc.Draft == load.Draft4 {
		if _, ok := obj["id"].(string); ok {
			delete(obj, "id")
		}
		exclusiveBound(obj, "exclusiveMinimum", "minimum")
		exclusiveBound(obj, "exclusiveMaximum", "maximum")
	}
	if sc.Draft.Version >= 2020 {
		if prefix, ok := obj["prefixItems"]; ok {
			if rest, ok := obj["items"]; ok {
				obj["additionalItems"] = rest
			}
			obj["items"] = prefix
			delete(obj, "prefixItems")
		}
	}
	if _, ok := obj["$ref"]; !ok {
		return nil
	}
	if sc.Ref == nil {
		return fmt.Errorf("%s: $ref %q was not resolved", sc.Location(), sc.RefText)
	}
	key, ok := keys[sc.Ref.Doc.Path]
	if !ok {
		return fmt.Errorf("%s: $ref %q points into %s, which is not among the schema files", sc.Location(), sc.RefText, sc.Ref.Doc.Path)
	}
	ref := "#/components/schemas/" + key + (&url.URL{Fragment: sc.Ref.Pointer}).EscapedFragment()
	delete(obj, "$ref")
	if sc.RefAlone || len(obj) == 0 {
		// Up to draft-07 the siblings of $ref are ignored; they are kept
		// for people to read, as the author wrote them.
		obj["$ref"] = ref
		return nil
	}
	all, _ := obj["allOf"].([]any)
	obj["allOf"] = append([]any{map[string]any{"$ref": ref}}, all...)
	return nil
}

// exclusiveBound rewrites draft-04's {"minimum": 5, "exclusiveMinimum":
// true} as {"exclusiveMinimum": 5}.
func exclusiveBound(obj map[string]any, exclusive, bound string) {
	flag, ok := obj[exclusive].(bool)
	if !ok {
		return
	}
	delete(obj, exclusive)
	if limit, ok := obj[bound]; ok && flag {
		obj[exclusive] = limit
		delete(obj, bound)
	}
}

// lookup resolves a JSON pointer in v; nil when it designates nothing.
func lookup(v any, pointer string) any {
	got, ok := load.Lookup(v, pointer)
	if !ok {
		return nil
	}
	return got
}
