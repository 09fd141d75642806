package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/internal/suggest"
	"github.com/warrenbus/warren/schemas"
)

// JSON Schema ignores a key it does not know, and so does warren: vendors
// annotate schemas with keys of their own (x-go-type, x-owner), and
// published schemas must load as they are. A misspelt keyword is ignored
// the same way, which silently changes what a schema says: "requried"
// leaves every property optional, "x-routng-key" turns a fact into a
// shared definition that nothing uses, "x-verison" leaves the version at 1.
//
// So a key that no draft and no part of warren defines, and that is a slip
// of the keyboard (suggest.Slip) from a keyword that applies where it is
// written, is reported with that keyword. When the keyword is missing
// beside it and says something about values, Go types or how the file is
// read, the schema means something other than its author wrote: that is
// an error of the model, in `warren generate` and `warren check` alike.
// When the keyword is written beside it too, or only documents (a
// "descripton"), nothing was lost that the generated code depends on: lint
// warns (rule misspelt-keyword), and a vendored file still generates.
// A key in warren's own namespace (x-warren-) that warren does not read
// where it is written is an error, near a keyword or not: no vendor
// defines such keys, so it can only be a mistake.

// Misspelt is a key of a schema object that is probably a misspelt keyword.
type Misspelt struct {
	Doc     *load.Document
	Pointer string // the key's: its schema's pointer and the key
	Key     string
	// Keyword is the keyword it is a slip away from; "" for a key in
	// warren's namespace (x-warren-) that is near none.
	Keyword string
	// Beside says the schema writes Keyword too.
	Beside bool
	// Severe says what Keyword would say is lost (the keyword is not
	// beside it, and says something about values, Go types or how the
	// file is read), or that the key is in warren's namespace. A severe
	// one is an error, the others lint warnings.
	Severe bool
}

// Message says what is wrong and what was probably meant.
func (m Misspelt) Message() string {
	key := strconv.Quote(m.Key)
	switch {
	case m.Keyword == "":
		return fmt.Sprintf("unknown keyword %s: keys starting with %q are warren's own, and warren reads none such here", key, warrenPrefix)
	case m.Beside:
		return fmt.Sprintf("unknown keyword %s beside %q; a misspelt copy? As written it is ignored", key, m.Keyword)
	}
	return fmt.Sprintf("unknown keyword %s; did you mean %q? An unknown keyword is ignored, so as written this schema has no %q", key, m.Keyword, m.Keyword)
}

// warrenPrefix starts the keys no one but warren defines.
const warrenPrefix = "x-warren-"

// draftKeywords are the keywords of each draft's vocabularies, including
// those its meta-schema keeps from earlier drafts for compatibility
// (definitions, dependencies).
var draftKeywords = func() map[*load.Draft][]string {
	d4 := []string{
		"$schema", "id", "$ref", "title", "description", "default", "definitions",
		"type", "enum", "format", "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
		"minLength", "maxLength", "pattern", "items", "additionalItems", "minItems", "maxItems", "uniqueItems",
		"properties", "patternProperties", "additionalProperties", "required", "minProperties", "maxProperties",
		"dependencies", "allOf", "anyOf", "oneOf", "not",
	}
	d6 := append(slices.DeleteFunc(slices.Clone(d4), func(k string) bool { return k == "id" }),
		"$id", "examples", "const", "contains", "propertyNames")
	d7 := append(slices.Clone(d6), "$comment", "if", "then", "else", "readOnly", "writeOnly", "contentMediaType", "contentEncoding")
	d2019 := append(slices.Clone(d7), "$anchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary", "$defs",
		"dependentSchemas", "dependentRequired", "unevaluatedItems", "unevaluatedProperties",
		"minContains", "maxContains", "deprecated", "contentSchema")
	d2020 := append(slices.DeleteFunc(slices.Clone(d2019), func(k string) bool { return k == "$recursiveRef" || k == "$recursiveAnchor" }),
		"prefixItems", "$dynamicRef", "$dynamicAnchor")
	return map[*load.Draft][]string{load.Draft4: d4, load.Draft6: d6, load.Draft7: d7, load.Draft2019: d2019, load.Draft2020: d2020}
}()

// readEverywhere are keywords warren reads in a file of any draft: the
// loader takes $defs and definitions alike, and deprecated marks a fact
// or a field whatever the draft.
var readEverywhere = []string{"$defs", "definitions", "deprecated"}

// foreignKeywords are keys other specifications define in schema
// objects, which a file in the wild may carry: OpenAPI's. Its "example" is
// one letter from "examples", and is no misspelling of it.
var foreignKeywords = []string{"example", "nullable", "discriminator", "xml", "externalDocs"}

// documenting keywords say nothing about values or Go types: misspelt,
// only documentation is lost, which lint reports as a warning.
var documenting = []string{"description", "$comment", "examples", "readOnly", "writeOnly", "contentMediaType", "contentEncoding"}

// nestedExtensions are warren's keywords below a file's root: the field a
// property was renamed from, for the conversion between fact versions.
var nestedExtensions = []string{"x-renamed-from"}

// rootExtensions are warren's keywords at a file's root: those of the
// fact and request meta-schemas (so that a keyword added there is known
// here), and x-warren-lint, which lint reads.
var rootExtensions = sync.OnceValue(func() []string {
	set := map[string]bool{"x-warren-lint": true}
	for _, src := range [][]byte{schemas.Fact, schemas.Request} {
		var meta struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(src, &meta); err != nil {
			panic("model: warren's meta-schemas are embedded, and valid: " + err.Error())
		}
		for k := range meta.Properties {
			if strings.HasPrefix(k, "x-") {
				set[k] = true
			}
		}
	}
	return load.SortedKeys(set)
})

// knownKeys are the keys that are never a misspelling: a keyword of some
// draft (a draft-04 file may well say "$defs"), of warren anywhere, or of
// a specification whose schemas are found in the wild.
var knownKeys = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{}
	for _, kws := range draftKeywords {
		for _, k := range kws {
			known[k] = true
		}
	}
	for _, list := range [][]string{readEverywhere, foreignKeywords, nestedExtensions, rootExtensions()} {
		for _, k := range list {
			known[k] = true
		}
	}
	return known
})

// MisspeltKeywords finds the probably misspelt keys of every schema of the
// directory (not of its imports, which are checked where they are
// generated), file by file.
func MisspeltKeywords(s *load.Schemas) []Misspelt {
	custom := map[string]bool{}
	for _, ms := range s.Manifest.MetaSchemas {
		if ms.File != "" {
			custom[ms.URL] = true
		}
	}
	var out []Misspelt
	visit := func(n *load.Schema) bool {
		if n.Keywords != nil {
			// A vendored meta-schema may define keywords of its own
			// (Iglu's "self"): only warren's keys are judged there.
			out = append(out, misspeltIn(n, custom[n.Doc.MetaSchema])...)
		}
		return true
	}
	for _, doc := range s.Docs {
		for _, root := range doc.Roots() {
			root.Walk(visit)
		}
	}
	for _, r := range s.Requests {
		r.Reply.Walk(visit) // x-reply holds a schema no draft knows of
	}
	return out
}

// misspeltIn checks the keys of one schema object, in the order written.
func misspeltIn(n *load.Schema, extensionsOnly bool) []Misspelt {
	extensions := nestedExtensions
	if n.Pointer == "" {
		extensions = rootExtensions()
	}
	candidates := slices.Clone(extensions)
	if !extensionsOnly {
		candidates = append(append(candidates, draftKeywords[n.Draft]...), readEverywhere...)
	}
	known := knownKeys()
	var out []Misspelt
	for _, key := range n.Doc.Keys(n.Pointer) {
		ours := strings.HasPrefix(key, warrenPrefix)
		if ours && slices.Contains(extensions, key) || !ours && known[key] {
			continue
		}
		keyword, near := suggest.Slip(key, candidates)
		if !near && !ours {
			continue // a vendor's key, or a word of the author's own
		}
		m := Misspelt{Doc: n.Doc, Pointer: load.Append(n.Pointer, key), Key: key, Keyword: keyword}
		m.Beside = near && n.Has(keyword)
		m.Severe = !near || !m.Beside && !slices.Contains(documenting, keyword)
		out = append(out, m)
	}
	return out
}

// checkKeywords refuses the misspelt keys that change what a schema says.
func (b *builder) checkKeywords() {
	for _, m := range MisspeltKeywords(b.s) {
		if m.Severe {
			b.errs.Add(m.Doc.KeyErrorf(m.Pointer, "%s", m.Message()))
		}
	}
}
