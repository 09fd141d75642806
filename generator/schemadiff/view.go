package schemadiff

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// view is the effective schema at one place: the schema's own keywords,
// then those of its $ref target, then those of its allOf members, merged
// the way the generator merges them (properties and required united, own
// keywords winning otherwise). Comparing views rather than raw JSON means
// that moving properties into a shared definition, or splitting a schema
// into allOf parts, is not reported as a change.
type view struct {
	at       loc
	never    bool            // the schema is false: nothing is valid
	kw       map[string]any  // keyword -> value, first definition wins
	kwAt     map[string]loc  // keyword -> schema object that defines it
	props    map[string]node // property name -> its schema
	required map[string]loc  // required name -> schema object that requires it
	types    map[string]bool // nil when no schema on the way says "type"
	typeAt   loc             // where the (first) type keyword is
	unres    map[string]loc  // $refs that could not be followed -> where
	seen     map[loc]bool    // schema objects merged, to stop at cycles
	dir      *Dir            // the side the view belongs to
	ordered  []string        // property names in a stable order
}

// notCompared are keywords that do not describe payloads (identifiers,
// containers of definitions reached through $ref, comments) or that the
// fact comparison handles itself (x-routing-key, x-version).
var notCompared = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true,
	"$defs": true, "definitions": true, "$comment": true, "examples": true,
	"readOnly": true, "writeOnly": true, "$vocabulary": true,
}

func (d *Dir) view(n node) *view {
	v := &view{
		at:       n.at,
		kw:       map[string]any{},
		kwAt:     map[string]loc{},
		props:    map[string]node{},
		required: map[string]loc{},
		unres:    map[string]loc{},
		seen:     map[loc]bool{},
		dir:      d,
	}
	v.merge(n)
	v.ordered = slices.Sorted(maps.Keys(v.props))
	return v
}

func (v *view) merge(n node) {
	if v.seen[n.at] {
		return
	}
	v.seen[n.at] = true
	switch s := n.v.(type) {
	case bool:
		if !s {
			v.never = true
		}
		return
	case map[string]any:
		// Own keywords first so that they win over referenced ones.
		for _, k := range slices.Sorted(maps.Keys(s)) {
			val := s[k]
			switch {
			case k == "$ref" || k == "allOf":
			case k == "properties":
				props, _ := val.(map[string]any)
				for _, name := range slices.Sorted(maps.Keys(props)) {
					if _, ok := v.props[name]; !ok {
						v.props[name] = node{loc{n.at.file, appendPtr(n.at.ptr, "properties", name)}, props[name]}
					}
				}
			case k == "required":
				names, _ := val.([]any)
				for i, x := range names {
					if name, ok := x.(string); ok {
						if _, dup := v.required[name]; !dup {
							v.required[name] = loc{n.at.file, appendPtr(n.at.ptr, "required", strconv.Itoa(i))}
						}
					}
				}
			case k == "type":
				v.mergeTypes(val, loc{n.at.file, appendPtr(n.at.ptr, "type")})
			case notCompared[k] || strings.HasPrefix(k, "x-"):
			default:
				if _, ok := v.kw[k]; !ok {
					v.kw[k] = val
					v.kwAt[k] = n.at
				}
			}
		}
		if ref, ok := s["$ref"].(string); ok {
			if target, ok := v.dir.resolve(n.at.file, ref); ok {
				v.merge(target)
			} else {
				v.unres[ref] = n.at
			}
		}
		if members, ok := s["allOf"].([]any); ok {
			for i, m := range members {
				v.merge(node{loc{n.at.file, appendPtr(n.at.ptr, "allOf", strconv.Itoa(i))}, m})
			}
		}
	}
}

// mergeTypes intersects type sets: every allOf member must hold, and an
// "integer" meets a "number" as "integer".
func (v *view) mergeTypes(val any, at loc) {
	set := typeSet(val)
	if v.types == nil {
		v.types, v.typeAt = set, at
		return
	}
	both := map[string]bool{}
	for t := range v.types {
		if admits(set, t) {
			both[t] = true
		}
	}
	for t := range set {
		if admits(v.types, t) {
			both[t] = true
		}
	}
	v.types = both
}

// typeSet reads the value of a "type" keyword.
func typeSet(val any) map[string]bool {
	set := map[string]bool{}
	switch t := val.(type) {
	case string:
		set[t] = true
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

// admits reports whether a type set accepts every value of type t.
func admits(set map[string]bool, t string) bool {
	return set[t] || (t == "integer" && set["number"])
}

// isObject reports whether the view describes JSON objects: it says so, or
// it has properties without saying anything about type.
func (v *view) isObject() bool {
	if v.types != nil {
		return v.types["object"]
	}
	return len(v.props) > 0
}

// closed reports whether the object rejects, or checks against a schema,
// properties it does not list: a property one side adds or keeps is then
// judged by the other side's additionalProperties.
func (v *view) closed() bool {
	for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
		if ap, ok := v.kw[k]; ok && ap != true {
			return true
		}
	}
	return false
}

// keywordAt is the position of keyword k in the view, for reports.
func (v *view) keywordAt(k string) loc {
	at, ok := v.kwAt[k]
	if !ok {
		return v.at
	}
	return loc{at.file, appendPtr(at.ptr, k)}
}
