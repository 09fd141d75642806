package lint

import (
	"slices"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/internal/pattern"
)

func checkPastTense(p *pass) {
	for _, f := range p.in.Schemas.Facts {
		if msg := pastTenseProblem(f.RoutingKey); msg != "" {
			p.report(f.KeyDoc, f.KeyPointer, "%s", msg)
		}
	}
}

// typeGivers are the keywords that decide what a property holds when
// "type" is absent: a reference, a fixed set of values, or a combination of
// schemas that say it themselves.
var typeGivers = []string{"type", "$ref", "enum", "const", "allOf", "oneOf", "anyOf"}

// walk calls fn for every schema of every file, read under its draft.
func (p *pass) walk(fn func(s *load.Schema)) {
	for _, doc := range p.in.Schemas.Docs {
		for _, root := range doc.Roots() {
			root.Walk(func(s *load.Schema) bool {
				if s.Keywords != nil {
					fn(s)
				}
				return true
			})
		}
	}
}

// checkPropertyTypes flags properties that accept any JSON value because
// nothing says what they hold. The generator maps such a property to `any`,
// which is rarely what the author meant. A property that an allOf member
// only constrains ({"maxLength": 200}) is fine when another part of the
// same merged object gives its type.
func checkPropertyTypes(p *pass) {
	p.walk(func(s *load.Schema) {
		var merged map[string][]*load.Schema // computed when needed
		props := slices.Clone(s.Properties)
		slices.SortFunc(props, func(a, b *load.Named) int { return strings.Compare(a.Name, b.Name) })
		for _, prop := range props {
			ps, name := prop.Schema, prop.Name
			switch {
			case ps.Bool != nil:
				if *ps.Bool {
					p.report(ps.Doc, ps.Pointer, "property %q is true, which accepts any JSON value; say its \"type\"", name)
				}
			case ps.Keywords != nil:
				if hasAny(ps, typeGivers) {
					continue
				}
				if merged == nil {
					merged = p.mergedProperties(s)
				}
				if !typedSomewhere(merged[name]) {
					p.report(ps.Doc, ps.Pointer, "property %q has no \"type\" (nor $ref, enum, const, allOf, oneOf, anyOf), so it accepts any JSON value and its Go field is raw JSON (json.RawMessage); keywords such as properties or items apply only to values of their type", name)
				}
			}
		}
	})
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
	p.walk(func(s *load.Schema) {
		if !isObjectSchema(s) || isAllOfMember(s.Pointer) || members[s] || hasAny(s, []string{"additionalProperties", "unevaluatedProperties"}) {
			return
		}
		what := "this object schema"
		if s.Pointer == "" {
			what = "the schema"
			if key, ok := s.Keywords["x-routing-key"].(string); ok {
				what = "fact " + key
			}
		}
		p.report(s.Doc, s.Pointer, "%s does not decide: \"additionalProperties\": false closes it, a schema makes it a map, true keeps it open", what)
	})
}

// allOfTargets returns the schemas that an allOf member reaches by $ref:
// they are members too, wherever they are written.
func (p *pass) allOfTargets() map[*load.Schema]bool {
	out := map[*load.Schema]bool{}
	p.walk(func(s *load.Schema) {
		if s.Ref != nil && isAllOfMember(s.Pointer) {
			out[s.Ref] = true
		}
	})
	return out
}

// checkRequired flags names in "required" that no property declares. The
// properties looked at are the schema's own, those of its allOf members
// (through $ref) and, for an allOf member, its parent's: allOf is merged
// into one Go type. A name matched by patternProperties, or required of an
// object whose additionalProperties is a schema (a map), is legitimate.
func checkRequired(p *pass) {
	p.walk(func(s *load.Schema) {
		if len(s.Required) == 0 {
			return
		}
		if ap := s.AdditionalProperties; ap != nil && ap.Keywords != nil {
			return
		}
		declared := p.mergedProperties(s)
		patterns := patternsOf(s)
		for i, name := range s.Required {
			if len(declared[name]) > 0 || matchesAny(patterns, name) {
				continue
			}
			p.report(s.Doc, load.AppendIndex(load.Append(s.Pointer, "required"), i), "%q is required but no property declares it; a typo, or a missing entry in \"properties\"", name)
		}
	})
}

// collectProperties adds the properties of schema s and of its allOf
// members and $ref targets to declared: name -> every schema given for it,
// because allOf merges them into one Go field.
func collectProperties(s *load.Schema, declared map[string][]*load.Schema, seen map[*load.Schema]bool) {
	if seen[s] || s.Keywords == nil {
		return
	}
	seen[s] = true
	for _, prop := range s.Properties {
		declared[prop.Name] = append(declared[prop.Name], prop.Schema)
	}
	if s.Ref != nil {
		collectProperties(s.Ref, declared, seen)
	}
	for _, m := range s.AllOf {
		collectProperties(m, declared, seen)
	}
}

// mergedProperties returns the properties of the object that schema s is
// part of: its own, its allOf members', and, for a member of an allOf,
// oneOf or anyOf or a not, if, then or else (each applies to the same
// value as the schema around it), the parent's and its allOf members', up
// through every such parent. A branch that requires a property the schema beside it
// declares ({"oneOf": [{"required": ["email"]}, ...]}) names a declared
// property.
func (p *pass) mergedProperties(s *load.Schema) map[string][]*load.Schema {
	declared := map[string][]*load.Schema{}
	seen := map[*load.Schema]bool{}
	collectProperties(s, declared, seen)
	for ptr := s.Pointer; ; {
		parent, ok := memberParent(ptr)
		if !ok {
			break
		}
		ps := s.Doc.SchemaAt(parent)
		if ps == nil {
			break
		}
		collectProperties(ps, declared, seen)
		ptr = parent
	}
	return declared
}

// memberParent returns the pointer of the schema whose allOf, oneOf or
// anyOf holds the schema at ptr, or whose not, if, then or else is it:
// each applies to the same value as the schema around it.
func memberParent(ptr string) (string, bool) {
	for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
		if parent, ok := applicatorParent(ptr, kw); ok {
			return parent, true
		}
	}
	for _, kw := range []string{"/not", "/if", "/then", "/else"} {
		if parent, ok := strings.CutSuffix(ptr, kw); ok {
			return parent, true
		}
	}
	return "", false
}

func patternsOf(s *load.Schema) []*pattern.Regexp {
	var out []*pattern.Regexp
	for _, pp := range s.PatternProperties {
		// The loader refused every pattern that does not compile.
		if re, err := pattern.Compile(pp.Name); err == nil {
			out = append(out, re)
		}
	}
	return out
}

// matchesAny reports whether s matches one of res. A match that was
// stopped counts as one: lint warns only where it is sure.
func matchesAny(res []*pattern.Regexp, s string) bool {
	for _, re := range res {
		if ok, err := re.Match(s); ok || err != nil {
			return true
		}
	}
	return false
}

// isObjectSchema reports whether s describes JSON objects: its type says
// object, or it declares properties without a type.
func isObjectSchema(s *load.Schema) bool {
	if s.Types != nil {
		return slices.Contains(s.Types, "object")
	}
	return s.Has("properties")
}

// allOfParent returns the pointer of the schema whose allOf holds the
// schema at ptr.
func allOfParent(ptr string) (string, bool) { return applicatorParent(ptr, "allOf") }

// applicatorParent returns the pointer of the schema whose array keyword
// kw (allOf, oneOf, anyOf) holds the schema at ptr, if it is such a
// member.
func applicatorParent(ptr, kw string) (string, bool) {
	i := strings.LastIndex(ptr, "/")
	if i < 0 || ptr[i+1:] == "" {
		return "", false
	}
	rest := ptr[:i]
	if !strings.HasSuffix(rest, "/"+kw) || strings.Trim(ptr[i+1:], "0123456789") != "" {
		return "", false
	}
	return strings.TrimSuffix(rest, "/"+kw), true
}

func isAllOfMember(ptr string) bool {
	_, ok := allOfParent(ptr)
	return ok
}

// typedSomewhere reports whether one of the schemas given for a property
// decides its type.
func typedSomewhere(schemas []*load.Schema) bool {
	for _, s := range schemas {
		if s.Keywords != nil && hasAny(s, typeGivers) {
			return true
		}
	}
	return false
}

func hasAny(s *load.Schema, keys []string) bool {
	return slices.ContainsFunc(keys, s.Has)
}
