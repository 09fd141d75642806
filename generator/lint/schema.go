package lint

import (
	"regexp"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

func checkPastTense(p *pass) {
	for _, f := range p.in.Schemas.Facts {
		if msg := pastTenseProblem(f.RoutingKey); msg != "" {
			p.report(f.Doc, "/x-routing-key", "%s", msg)
		}
	}
}

// typeGivers are the keywords that decide what a property holds when
// "type" is absent: a reference, a fixed set of values, or a combination of
// schemas that say it themselves.
var typeGivers = []string{"type", "$ref", "enum", "const", "allOf", "oneOf", "anyOf"}

// checkPropertyTypes flags properties that accept any JSON value because
// nothing says what they hold. The generator maps such a property to `any`,
// which is rarely what the author meant. A property that an allOf member
// only constrains ({"maxLength": 200}) is fine when another part of the
// same merged object gives its type.
func checkPropertyTypes(p *pass) {
	for _, doc := range p.in.Schemas.Docs {
		load.WalkSchemas(doc.Value, "", func(ptr string, s map[string]any) bool {
			props, _ := s["properties"].(map[string]any)
			var merged map[string][]any // computed when needed
			for _, name := range load.SortedKeys(props) {
				at := load.Append(load.Append(ptr, "properties"), name)
				switch ps := props[name].(type) {
				case bool:
					if ps {
						p.report(doc, at, "property %q is true, which accepts any JSON value; say its \"type\"", name)
					}
				case map[string]any:
					if hasAny(ps, typeGivers) {
						continue
					}
					if merged == nil {
						merged = p.mergedProperties(doc, ptr, s)
					}
					if !typedSomewhere(merged[name]) {
						p.report(doc, at, "property %q has no \"type\" (nor $ref, enum, const, allOf, oneOf, anyOf), so it accepts any JSON value", name)
					}
				}
			}
			return true
		})
	}
}

// checkAdditionalProperties flags object schemas that leave
// additionalProperties (or unevaluatedProperties) unsaid. Either answer is
// fine: false makes the Go type closed, a schema makes it a map, true keeps
// it open; the point is to decide. A direct member of an allOf is skipped:
// its parent decides for the merged object, and a closed member would
// reject the other members' properties. So is a schema that an allOf
// member reaches by $ref (a shared base object).
func checkAdditionalProperties(p *pass) {
	members := p.allOfTargets()
	for _, doc := range p.in.Schemas.Docs {
		load.WalkSchemas(doc.Value, "", func(ptr string, s map[string]any) bool {
			if !isObjectSchema(s) || isAllOfMember(ptr) || members[doc.Path+"#"+ptr] || hasAny(s, []string{"additionalProperties", "unevaluatedProperties"}) {
				return true
			}
			what := "this object schema"
			if ptr == "" {
				what = "the schema"
				if key, ok := s["x-routing-key"].(string); ok {
					what = "fact " + key
				}
			}
			p.report(doc, ptr, "%s does not decide \"additionalProperties\": false closes it, a schema makes it a map, true keeps it open", what)
			return true
		})
	}
}

// allOfTargets returns the schemas that an allOf member reaches by $ref,
// as "file#pointer": they are members too, wherever they are written.
func (p *pass) allOfTargets() map[string]bool {
	out := map[string]bool{}
	for _, doc := range p.in.Schemas.Docs {
		load.WalkSchemas(doc.Value, "", func(ptr string, s map[string]any) bool {
			if ref, ok := s["$ref"].(string); ok && isAllOfMember(ptr) {
				if t, err := p.in.Schemas.Resolve(doc, ref); err == nil {
					out[t.Doc.Path+"#"+t.Pointer] = true
				}
			}
			return true
		})
	}
	return out
}

// checkRequired flags names in "required" that no property declares. The
// properties looked at are the schema's own, those of its allOf members
// (through $ref) and, for an allOf member, its parent's: allOf is merged
// into one Go type. A name matched by patternProperties, or required of an
// object whose additionalProperties is a schema (a map), is legitimate.
func checkRequired(p *pass) {
	for _, doc := range p.in.Schemas.Docs {
		load.WalkSchemas(doc.Value, "", func(ptr string, s map[string]any) bool {
			req, _ := s["required"].([]any)
			if len(req) == 0 {
				return true
			}
			if ap, ok := s["additionalProperties"].(map[string]any); ok && ap != nil {
				return true
			}
			declared := p.mergedProperties(doc, ptr, s)
			patterns := patternsOf(s)
			for i, x := range req {
				name, ok := x.(string)
				if !ok || len(declared[name]) > 0 || matchesAny(patterns, name) {
					continue
				}
				p.report(doc, load.AppendIndex(load.Append(ptr, "required"), i), "%q is required but no property declares it; a typo, or a missing entry in \"properties\"", name)
			}
			return true
		})
	}
}

// collectProperties adds the properties of schema s (at ptr in doc) and
// of its allOf members and $ref targets to declared: name -> every schema
// given for it, because allOf merges them into one Go field.
func (p *pass) collectProperties(doc *load.Document, ptr string, s map[string]any, declared map[string][]any, seen map[string]bool) {
	key := doc.Path + "#" + ptr
	if seen[key] {
		return
	}
	seen[key] = true
	props, _ := s["properties"].(map[string]any)
	for name, ps := range props {
		declared[name] = append(declared[name], ps)
	}
	if ref, ok := s["$ref"].(string); ok {
		if t, err := p.in.Schemas.Resolve(doc, ref); err == nil {
			if ts, ok := t.Value().(map[string]any); ok {
				p.collectProperties(t.Doc, t.Pointer, ts, declared, seen)
			}
		}
	}
	members, _ := s["allOf"].([]any)
	for i, m := range members {
		if ms, ok := m.(map[string]any); ok {
			p.collectProperties(doc, load.AppendIndex(load.Append(ptr, "allOf"), i), ms, declared, seen)
		}
	}
}

// mergedProperties returns the properties of the object that the schema at
// ptr is part of: its own, its allOf members', and, for an allOf member,
// its parent's and its siblings'.
func (p *pass) mergedProperties(doc *load.Document, ptr string, s map[string]any) map[string][]any {
	declared := map[string][]any{}
	seen := map[string]bool{}
	p.collectProperties(doc, ptr, s, declared, seen)
	if parent, ok := allOfParent(ptr); ok {
		if ps, ok := doc.Lookup(parent); ok {
			if pm, ok := ps.(map[string]any); ok {
				p.collectProperties(doc, parent, pm, declared, seen)
			}
		}
	}
	return declared
}

func patternsOf(s map[string]any) []*regexp.Regexp {
	pp, _ := s["patternProperties"].(map[string]any)
	var out []*regexp.Regexp
	for _, pat := range load.SortedKeys(pp) {
		// The loader compiled every pattern already; one Go cannot compile
		// (ECMA-only syntax) simply matches nothing here.
		if re, err := regexp.Compile(pat); err == nil {
			out = append(out, re)
		}
	}
	return out
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// isObjectSchema reports whether s describes JSON objects: its type says
// object, or it declares properties without a type.
func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
		return false
	}
	_, hasProps := s["properties"]
	return hasProps
}

// allOfParent returns the pointer of the schema whose allOf holds the
// schema at ptr.
func allOfParent(ptr string) (string, bool) {
	i := strings.LastIndex(ptr, "/")
	if i < 0 {
		return "", false
	}
	rest := ptr[:i]
	if !strings.HasSuffix(rest, "/allOf") || strings.Trim(ptr[i+1:], "0123456789") != "" {
		return "", false
	}
	return strings.TrimSuffix(rest, "/allOf"), true
}

func isAllOfMember(ptr string) bool {
	_, ok := allOfParent(ptr)
	return ok
}

// typedSomewhere reports whether one of the schemas given for a property
// decides its type.
func typedSomewhere(schemas []any) bool {
	for _, x := range schemas {
		if m, ok := x.(map[string]any); ok && hasAny(m, typeGivers) {
			return true
		}
	}
	return false
}

func hasAny(s map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}
