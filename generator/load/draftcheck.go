package load

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// surelyDraftValid reports whether v certainly satisfies the JSON Schema
// 2020-12 meta-schema, by checking directly the keywords that meta-schema
// constrains. The general validator evaluates the meta-schema's dynamic
// references and vocabularies for every subschema, which made it the
// largest single cost of loading a directory; this walk does the same
// checks in a few microseconds per file.
//
// It is a sufficient condition only: whenever it returns false, the caller
// runs the full meta-schema validation, which decides and explains. So
// errors always come from the one validator, and a keyword this function
// does not understand (or understands only in its common form) costs speed,
// never correctness. TestSurelyDraftValidAgrees and FuzzSurelyDraftValid
// check that it never accepts what the meta-schema rejects.
func surelyDraftValid(v any) bool {
	switch x := v.(type) {
	case bool:
		return true
	case map[string]any:
		for kw, val := range x {
			if !draftKeywordValid(kw, val) {
				return false
			}
		}
		return true
	}
	return false
}

// draftKeywordValid checks one keyword of a schema object against what the
// 2020-12 meta-schema (core, applicator, unevaluated, validation, meta-data,
// format-annotation and content vocabularies, plus the keywords it keeps from
// earlier drafts) requires of its value. Keywords it does not define are
// allowed.
func draftKeywordValid(kw string, v any) bool {
	switch kw {
	// Subschemas.
	case "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema":
		return surelyDraftValid(v)
	case "prefixItems", "allOf", "anyOf", "oneOf":
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return false
		}
		for _, sub := range arr {
			if !surelyDraftValid(sub) {
				return false
			}
		}
		return true
	case "$defs", "definitions", "properties", "dependentSchemas":
		return allValues(v, surelyDraftValid)
	case "patternProperties":
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for name, sub := range obj {
			if _, err := regexp.Compile(name); err != nil || !surelyDraftValid(sub) {
				return false
			}
		}
		return true
	case "dependencies":
		return allValues(v, func(v any) bool { return surelyDraftValid(v) || isStringSet(v) })

	// Core.
	case "$schema":
		s, ok := v.(string)
		u, sure := parsesAsURL(s)
		return ok && sure && u.IsAbs()
	case "$ref":
		s, ok := v.(string)
		_, sure := parsesAsURL(s)
		return ok && sure && !strings.Contains(s, `\`)
	case "$comment":
		return isString(v)
	case "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$recursiveRef", "$recursiveAnchor":
		// Rare, and rejected by warren anyway: leave them to the meta-schema.
		return false

	// Validation.
	case "type":
		if s, ok := v.(string); ok {
			return isSimpleType(s)
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 || !isStringSet(v) {
			return false
		}
		for _, t := range arr {
			if !isSimpleType(t.(string)) {
				return false
			}
		}
		return true
	case "const", "default":
		return true
	case "enum", "examples":
		_, ok := v.([]any)
		return ok
	case "multipleOf":
		// exclusiveMinimum 0. A float that parses as positive is a
		// positive number; anything odder goes to the meta-schema.
		s, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(s.String(), 64)
		return err == nil && f > 0
	case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
		_, ok := v.(json.Number)
		return ok
	case "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties":
		return isNonNegativeInteger(v)
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := regexp.Compile(s) // the validator's "regex" format
		return err == nil
	case "required":
		return isStringSet(v)
	case "dependentRequired":
		return allValues(v, isStringSet)
	case "uniqueItems", "deprecated", "readOnly", "writeOnly":
		_, ok := v.(bool)
		return ok

	// Meta-data, format and content.
	case "title", "description", "format", "contentEncoding", "contentMediaType":
		return isString(v)
	}
	return true
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// allValues reports whether v is an object whose every value passes ok.
func allValues(v any, ok func(any) bool) bool {
	obj, isObj := v.(map[string]any)
	if !isObj {
		return false
	}
	for _, val := range obj {
		if !ok(val) {
			return false
		}
	}
	return true
}

// isStringSet reports whether v is an array of distinct strings (the
// meta-schema's stringArray).
func isStringSet(v any) bool {
	arr, ok := v.([]any)
	if !ok {
		return false
	}
	seen := make(map[string]bool, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

func isSimpleType(s string) bool {
	switch s {
	case "array", "boolean", "integer", "null", "number", "object", "string":
		return true
	}
	return false
}

// isNonNegativeInteger accepts the plain digit strings JSON writes for
// 0, 1, 2, ...; "1.0" or "1e2" are integers too, but rare enough to leave
// to the meta-schema.
func isNonNegativeInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok || n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// parsesAsURL mirrors the validator's uri and uri-reference formats: sure
// is false when url.Parse fails or the host looks like an IPv6 address,
// which the validator checks further.
func parsesAsURL(s string) (u *url.URL, sure bool) {
	u, err := url.Parse(s)
	if err != nil || strings.Contains(u.Hostname(), ":") {
		return nil, false
	}
	return u, true
}
