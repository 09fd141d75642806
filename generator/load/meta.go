package load

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/warrenbus/warren/internal/pattern"
	"github.com/warrenbus/warren/internal/suggest"
	"github.com/warrenbus/warren/schemas"
)

// metaSchemas are the compiled meta-schemas, plus warren's own ones as
// parsed JSON so that an error can be explained with the "x-expected" text
// and the list of accepted properties found next to the failing keyword.
type metaSchemas struct {
	manifest, fact *jsonschema.Schema
	request        *jsonschema.Schema
	drafts         map[*Draft]*jsonschema.Schema // each draft's own meta-schema
	docs           map[string]any                // $id -> parsed meta-schema

	// For one directory (see withCustom): the meta-schemas of its
	// manifest's metaSchemas by URL (without an empty fragment), their
	// files, which are meta-schemas and not schemas of the directory, and
	// whether the manifest failed to load (so that what a $schema no
	// draft names should be is unknown).
	custom    map[string]*customMeta
	metaFiles map[string]bool
	quiet     bool
}

var metas = sync.OnceValues(func() (*metaSchemas, error) {
	m := &metaSchemas{docs: make(map[string]any), drafts: make(map[*Draft]*jsonschema.Schema)}
	c := jsonschema.NewCompiler()
	// Asserting formats makes the 2020-12 meta-schema reject a "pattern"
	// that is not a valid regular expression, with its position.
	c.AssertFormat()
	c.UseRegexpEngine(metaRegexp)
	for url, src := range map[string][]byte{schemas.ManifestURL: schemas.Manifest, schemas.FactURL: schemas.Fact, schemas.RequestURL: schemas.Request} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(src)))
		if err != nil {
			return nil, fmt.Errorf("meta-schema %s: %w", url, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("meta-schema %s: %w", url, err)
		}
		m.docs[url] = doc
	}
	var err error
	if m.manifest, err = c.Compile(schemas.ManifestURL); err != nil {
		return nil, fmt.Errorf("compile meta-schema: %w", err)
	}
	if m.fact, err = c.Compile(schemas.FactURL); err != nil {
		return nil, fmt.Errorf("compile meta-schema: %w", err)
	}
	if m.request, err = c.Compile(schemas.RequestURL); err != nil {
		return nil, fmt.Errorf("compile meta-schema: %w", err)
	}
	// The validator ships the meta-schema of every draft.
	for _, d := range drafts {
		if m.drafts[d], err = c.Compile(d.URL); err != nil {
			return nil, fmt.Errorf("compile meta-schema of %s: %w", d, err)
		}
	}
	return m, nil
})

var printer = message.NewPrinter(language.English)

// metaRegexp compiles the patterns of the meta-schemas and, for format
// "regex", those of the schemas being loaded, as generated code and the
// reference validator read them (ECMA-262, internal/pattern): a pattern
// is refused here exactly when they could not run it.
func metaRegexp(expr string) (jsonschema.Regexp, error) {
	re, err := pattern.Compile(expr)
	if err != nil {
		return nil, err
	}
	return boolRegexp{re}, nil
}

// boolRegexp answers a match the validator's way, with a bool: a match
// that was stopped (only a pattern run by regexp2 can be, and warren's
// meta-schemas have none) does not match.
type boolRegexp struct{ *pattern.Regexp }

func (r boolRegexp) MatchString(s string) bool {
	ok, _ := r.Match(s)
	return ok
}

// check validates v, the value at pointer base in doc, against sch and adds
// one positioned error per failure to errs. It reports whether v was valid.
func (m *metaSchemas) check(doc *Document, base string, v any, sch *jsonschema.Schema, errs *ErrorList) bool {
	err := sch.Validate(v)
	if err == nil {
		return true
	}
	m.report(doc, base, v, err, errs)
	return false
}

// report adds the failures of a validation error to errs.
func (m *metaSchemas) report(doc *Document, base string, v any, err error, errs *ErrorList) {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		errs.Add(doc.Errorf(base, "%v", err))
		return
	}
	for _, l := range leaves(v, ve, leaf{}) {
		start := errs.Len()
		m.explain(doc, base, v, l, errs)
		by := m.customOf(l.err.SchemaURL)
		for _, e := range (*errs)[start:] {
			e.Root = e.Pointer == ""
			if why := draftMeaning(doc.Draft, e.Pointer); why != "" {
				e.Msg += " (" + why + ")"
			}
			if by != "" {
				e.Msg += " (" + by + ")"
			}
		}
	}
}

// draftMeaning says what the keyword at pointer means in draft d, when
// drafts disagree on it: "expected number, got true" alone would not tell a
// draft-04 author why their exclusiveMinimum is wrong.
func draftMeaning(d *Draft, pointer string) string {
	tokens, _ := Tokens(pointer)
	if d == nil || len(tokens) == 0 {
		return ""
	}
	if len(tokens) >= 2 {
		switch tokens[len(tokens)-2] {
		case "properties", "patternProperties", "$defs", "definitions", "dependencies", "dependentSchemas":
			return "" // a name, not a keyword
		}
	}
	return d.meaning(tokens[len(tokens)-1])
}

// leaf is one failure; key is set when the failure is about a property name
// (propertyNames) rather than a value.
type leaf struct {
	err *jsonschema.ValidationError
	key string   // the property name at fault, for propertyNames
	obj []string // the object holding key
	// trusted is the instance location of the nearest enclosing failure
	// whose location the validator copied (see propertyNamesAt).
	trusted []string
}

// leaves flattens a validation error of the instance root to the failures
// a user can act on. Of the branches of an anyOf/oneOf it keeps those that
// got past the type check: "expected one of ..., got "strin"" is useful,
// "got string, want array" from the other branch is not.
func leaves(root any, e *jsonschema.ValidationError, ctx leaf) []leaf {
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames, *kind.ContentSchema:
	default:
		ctx.trusted = e.InstanceLocation
	}
	if len(e.Causes) == 0 {
		ctx.err = e
		return []leaf{ctx}
	}
	causes := e.Causes
	switch k := e.ErrorKind.(type) {
	case *kind.PropertyNames:
		// The causes come from validating the name on its own, so their
		// instance locations are relative to nothing.
		var out []leaf
		for _, obj := range propertyNamesAt(root, ctx.trusted, len(e.InstanceLocation), k.Property, e.SchemaURL) {
			named := ctx
			named.key, named.obj = k.Property, obj
			for _, c := range causes {
				out = append(out, leaves(root, c, named)...)
			}
		}
		return out
	case *kind.AnyOf, *kind.OneOf:
		var relevant []*jsonschema.ValidationError
		for _, c := range causes {
			if _, isType := typeMismatch(c); !isType {
				relevant = append(relevant, c)
			}
		}
		if len(relevant) == 0 {
			ctx.err = mergeTypes(e, causes)
			return []leaf{ctx}
		}
		causes = relevant
	}
	var out []leaf
	for _, c := range causes {
		out = append(out, leaves(root, c, ctx)...)
	}
	return out
}

// typeMismatch returns the type error that is all a branch's failure
// amounts to, through the $ref (or group) that leads to it: draft-04's
// items is anyOf [{"$ref": "#"}, {"$ref": "#/definitions/schemaArray"}],
// and a schema whose pattern is wrong fails the second branch only by
// being an object, which is nothing the user should fix.
func typeMismatch(e *jsonschema.ValidationError) (*kind.Type, bool) {
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return k, len(e.Causes) == 0
	case *kind.Reference, *kind.Group, *kind.Schema:
		if len(e.Causes) == 1 {
			return typeMismatch(e.Causes[0])
		}
	}
	return nil, false
}

// mergeTypes turns "got string, want array" + "got string, want object" into
// one "got string, want array or object".
func mergeTypes(parent *jsonschema.ValidationError, causes []*jsonschema.ValidationError) *jsonschema.ValidationError {
	merged := &kind.Type{}
	for _, c := range causes {
		t, _ := typeMismatch(c)
		merged.Got = t.Got
		for _, w := range t.Want {
			if !slices.Contains(merged.Want, w) {
				merged.Want = append(merged.Want, w)
			}
		}
	}
	return &jsonschema.ValidationError{SchemaURL: parent.SchemaURL, InstanceLocation: parent.InstanceLocation, ErrorKind: merged}
}

func (m *metaSchemas) explain(doc *Document, base string, root any, l leaf, errs *ErrorList) {
	e := l.err
	rel := Pointer(e.InstanceLocation...)
	pointer := base + rel
	got, _ := Lookup(root, rel)
	at := doc.Errorf
	if l.key != "" {
		// The failure is about a property name: point at the name.
		pointer = Append(base+Pointer(l.obj...), l.key)
		got = l.key
		at = doc.KeyErrorf
	}
	node := m.schemaNode(e.SchemaURL)
	if exp, ok := node["x-expected"].(string); ok {
		switch e.ErrorKind.(type) {
		case *kind.Pattern, *kind.Const, *kind.Enum, *kind.MaxLength, *kind.MinLength:
			errs.Add(at(pointer, "expected %s, got %s", exp, describe(got)))
			return
		}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		errs.Add(doc.Errorf(pointer, "expected %s, got %s", strings.Join(k.Want, " or "), describe(got)))
	case *kind.Required:
		for _, name := range k.Missing {
			errs.Add(doc.Errorf(pointer, "missing required property %s", strconv.Quote(name)))
		}
	case *kind.AdditionalProperties:
		accepted := m.acceptedProperties(node)
		for _, name := range k.Properties {
			msg := fmt.Sprintf("unknown property %s", strconv.Quote(name))
			if s, ok := suggest.Closest(name, accepted); ok {
				msg += fmt.Sprintf("; did you mean %s?", strconv.Quote(s))
			}
			if len(accepted) > 0 {
				quoted := make([]string, len(accepted))
				for i, a := range accepted {
					quoted[i] = strconv.Quote(a)
				}
				msg += " (expected one of " + strings.Join(quoted, ", ") + ")"
			}
			errs.Add(doc.KeyErrorf(Append(pointer, name), "%s", msg))
		}
	case *kind.Const:
		errs.Add(doc.Errorf(pointer, "expected %s, got %s", describe(k.Want), describe(got)))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = describe(w)
		}
		errs.Add(doc.Errorf(pointer, "expected one of %s; got %s", strings.Join(want, ", "), describe(got)))
	case *kind.MinItems:
		errs.Add(doc.Errorf(pointer, "expected at least %d item(s), got %d", k.Want, k.Got))
	case *kind.MaxItems:
		errs.Add(doc.Errorf(pointer, "expected at most %d item(s), got %d", k.Want, k.Got))
	case *kind.MinLength:
		errs.Add(at(pointer, "expected at least %d character(s), got %s", k.Want, describe(got)))
	case *kind.MaxLength:
		errs.Add(at(pointer, "expected at most %d character(s), got %d", k.Want, k.Got))
	case *kind.Minimum:
		errs.Add(doc.Errorf(pointer, "expected at least %s, got %s", k.Want.RatString(), describe(got)))
	case *kind.Maximum:
		errs.Add(doc.Errorf(pointer, "expected at most %s, got %s", k.Want.RatString(), describe(got)))
	case *kind.FalseSchema:
		errs.Add(doc.KeyErrorf(pointer, "property not allowed here"))
	default:
		errs.Add(at(pointer, "%s", e.ErrorKind.LocalizedString(printer)))
	}
}

// schemaNode returns the object of one of warren's own meta-schemas at
// schemaURL (an absolute URL with a JSON-pointer fragment), or nil.
func (m *metaSchemas) schemaNode(schemaURL string) map[string]any {
	url, frag, _ := strings.Cut(schemaURL, "#")
	doc, ok := m.docs[url]
	if !ok {
		return nil
	}
	v, _ := Lookup(doc, frag)
	node, _ := v.(map[string]any)
	return node
}

func (m *metaSchemas) acceptedProperties(node map[string]any) []string {
	props, _ := node["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		if name != "$schema" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// describe renders a JSON value for an error message, short enough to read.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 60 {
			x = x[:57] + "..."
		}
		return strconv.Quote(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	default:
		return fmt.Sprint(x)
	}
}
