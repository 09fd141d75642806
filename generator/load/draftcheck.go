package load

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/internal/pattern"
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
	check, ok := keywordChecks[kw]
	return !ok || check(v)
}

// keywordChecks holds, per keyword of 2020-12, what its value must be.
var keywordChecks map[string]func(any) bool

func init() {
	keywordChecks = map[string]func(any) bool{
		// Core.
		"$schema": func(v any) bool {
			s, ok := v.(string)
			u, sure := parsesAsURL(s)
			return ok && sure && u.IsAbs()
		},
		"$ref": func(v any) bool {
			s, ok := v.(string)
			_, sure := parsesAsURL(s)
			return ok && sure && !strings.Contains(s, `\`)
		},
		"$comment": isString,
		// Validation.
		"type":       isTypeKeyword,
		"const":      func(any) bool { return true },
		"default":    func(any) bool { return true },
		"enum":       isArray,
		"examples":   isArray,
		"multipleOf": isPositiveNumber,
		"pattern": func(v any) bool {
			s, ok := v.(string)
			if !ok {
				return false
			}
			_, err := pattern.Compile(s) // the validator's "regex" format
			return err == nil
		},
		"required":          isStringSet,
		"dependentRequired": func(v any) bool { return allValues(v, isStringSet) },
		"patternProperties": isPatternProperties,
		"dependencies": func(v any) bool {
			return allValues(v, func(v any) bool { return surelyDraftValid(v) || isStringSet(v) })
		},
	}
	// Subschemas.
	for _, kw := range []string{"items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		keywordChecks[kw] = surelyDraftValid
	}
	for _, kw := range []string{"prefixItems", "allOf", "anyOf", "oneOf"} {
		keywordChecks[kw] = isSchemaArray
	}
	for _, kw := range []string{"$defs", "definitions", "properties", "dependentSchemas"} {
		keywordChecks[kw] = func(v any) bool { return allValues(v, surelyDraftValid) }
	}
	// Rare: leave them to the meta-schema.
	for _, kw := range []string{"$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$recursiveRef", "$recursiveAnchor"} {
		keywordChecks[kw] = func(any) bool { return false }
	}
	for _, kw := range []string{"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"} {
		keywordChecks[kw] = func(v any) bool { _, ok := v.(json.Number); return ok }
	}
	for _, kw := range []string{"maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties"} {
		keywordChecks[kw] = isNonNegativeInteger
	}
	for _, kw := range []string{"uniqueItems", "deprecated", "readOnly", "writeOnly"} {
		keywordChecks[kw] = func(v any) bool { _, ok := v.(bool); return ok }
	}
	// Meta-data, format and content.
	for _, kw := range []string{"title", "description", "format", "contentEncoding", "contentMediaType"} {
		keywordChecks[kw] = isString
	}
}

func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}

// isSchemaArray: a non-empty array of schemas.
func isSchemaArray(v any) bool {
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
}

func isPatternProperties(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for name, sub := range obj {
		if _, err := pattern.Compile(name); err != nil || !surelyDraftValid(sub) {
			return false
		}
	}
	return true
}

func isTypeKeyword(v any) bool {
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
}

// isPositiveNumber: exclusiveMinimum 0. A float that parses as positive is
// a positive number; anything odder goes to the meta-schema.
func isPositiveNumber(v any) bool {
	s, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(s.String(), 64)
	return err == nil && f > 0
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

// patternKeysValid reports whether every key of every patternProperties
// in the schema file doc is a pattern warren can run, adding an error at
// each key that is not. The meta-schemas of 2019-09 and later, and of
// draft-07, check the keys (propertyNames with format "regex"); those of
// draft-04 and draft-06 do not, and a key nothing can compile would only
// fail in the generated code.
func patternKeysValid(doc *Document, errs *ErrorList) bool {
	return patternKeysValidAt(doc, "", doc.Value, errs)
}

// patternKeysValidAt is patternKeysValid for the schema v at ptr in doc
// and those below it.
func patternKeysValidAt(doc *Document, ptr string, v any, errs *ErrorList) bool {
	if doc.Draft.Version > 6 {
		return true
	}
	valid := true
	WalkSchemas(v, ptr, func(ptr string, schema map[string]any) bool {
		keys, _ := schema["patternProperties"].(map[string]any)
		for _, key := range SortedKeys(keys) {
			if _, err := metaRegexp(key); err != nil {
				valid = false
				errs.Add(doc.KeyErrorf(Append(Append(ptr, "patternProperties"), key), "'%s' is not valid regex: %v", key, err))
			}
		}
		return true
	})
	return valid
}
