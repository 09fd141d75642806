package load

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Fact is a fact: a routing key and the schema of its payload, with its
// warren keywords read and checked. It is declared either in the payload's
// file (a top-level x-routing-key) or in the manifest's "facts", which
// points at a schema so that a vendored file stays as its vendor wrote it.
type Fact struct {
	Doc         *Document // the file of the payload schema
	Schema      *Schema   // the payload schema: Doc's root, or where the manifest points
	RoutingKey  string    // dotted lower-case words, no wildcards
	Title       string    // title, "" when absent; names the Go type
	Description string    // description, "" when absent
	Version     int       // x-version (manifest: version), 1 when absent
	Deprecated  bool      // deprecated
	// Compatibility is x-compatibility, the fact's own mode for warren
	// diff ("FULL", "BACKWARD_TRANSITIVE", ...); "" when absent, which
	// means the manifest's.
	Compatibility string

	// KeyDoc and KeyPointer say where the routing key is declared: the
	// file's /x-routing-key, or warren.json's /facts/<key>.
	KeyDoc     *Document
	KeyPointer string

	// Ordering is the fact's ordering key and default priority.
	Ordering Ordering

	// Older are the fact's older versions, oldest first, when the
	// directory declares several side by side (see versions.go); each is
	// a Fact of its own, with its file and schema.
	Older []*Fact
	// Upcast is x-upcast: "generated", "manual", or "" (generated when
	// the change from the previous version is mechanical).
	Upcast string
}

// Path returns the file of the fact's payload schema, relative to the
// schema directory.
func (f *Fact) Path() string { return f.Doc.Path }

// Location returns the payload schema as "file" or "file#pointer", the
// location that validates it.
func (f *Fact) Location() string { return f.Schema.Location() }

// InManifest reports whether the manifest declares the fact.
func (f *Fact) InManifest() bool { return f.KeyDoc != f.Doc }

func readFact(doc *Document, root map[string]any) *Fact {
	f := &Fact{Doc: doc, RoutingKey: root["x-routing-key"].(string), Version: 1, KeyDoc: doc, KeyPointer: "/x-routing-key"}
	f.Title, _ = root["title"].(string)
	f.Description, _ = root["description"].(string)
	f.Deprecated, _ = root["deprecated"].(bool)
	f.Compatibility, _ = root["x-compatibility"].(string)
	f.Upcast, _ = root["x-upcast"].(string)
	if v, ok := root["x-version"].(json.Number); ok {
		n, _ := strconv.Atoi(v.String())
		f.Version = n
	}
	f.Ordering = readOrdering(doc, "", root, false)
	return f
}

// manifestFacts reads the manifest's "facts": routing key -> the schema
// of the payload ("vendor/github/push.json", optionally with a JSON
// pointer or an anchor, or a URL some file declares as its $id), with the
// title, version and description the file itself does not carry.
func (s *Schemas) manifestFacts(errs *ErrorList) []*Fact {
	doc := s.Manifest.Doc
	root, _ := doc.Value.(map[string]any)
	decls, _ := root["facts"].(map[string]any)
	var facts []*Fact
	for _, key := range SortedKeys(decls) {
		ptr := Pointer("facts", key)
		obj := decls[key].(map[string]any)
		ref := obj["schema"].(string)
		target, err := s.resolve(FileURI(doc.Path), ref)
		if errors.Is(err, errNotLoaded) {
			continue
		}
		if err != nil {
			// Resolving words it for a $ref; here the reference is "schema".
			errs.Add(doc.Errorf(Append(ptr, "schema"), "%s", strings.Replace(err.Error(), "$ref ", "schema ", 1)))
			continue
		}
		f := &Fact{Doc: target.Doc, Schema: target, RoutingKey: key, Version: 1, KeyDoc: doc, KeyPointer: ptr}
		f.Title, _ = obj["title"].(string)
		f.Description, _ = obj["description"].(string)
		if f.Description == "" {
			f.Description = target.Description
		}
		f.Deprecated, _ = obj["deprecated"].(bool)
		f.Compatibility, _ = obj["compatibility"].(string)
		if v, ok := obj["version"].(json.Number); ok {
			f.Version, _ = strconv.Atoi(v.String())
		}
		f.Ordering = readOrdering(doc, ptr, obj, true)
		facts = append(facts, f)
	}
	return facts
}

// where renders a place for an error: "file:line:col".
func where(doc *Document, ptr string) string {
	if line, col, ok := doc.Position(ptr); ok {
		return doc.Path + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
	}
	return doc.Path
}

// Vendored returns the schema files a vendor wrote: those the manifest's
// "facts" point into, and those they refer to, but for a file that
// declares a fact of its own (x-routing-key), which its team writes. A
// vendored file is never edited, so what the generator would refuse in a
// team's file and can do without (a default the schema refuses) is left
// out there instead, with a warning.
func (s *Schemas) Vendored() map[*Document]bool {
	own := map[*Document]bool{}
	for _, f := range s.Facts {
		if !f.InManifest() {
			own[f.Doc] = true
		}
	}
	out := map[*Document]bool{}
	var add func(doc *Document)
	add = func(doc *Document) {
		if out[doc] || own[doc] {
			return
		}
		out[doc] = true
		for _, target := range s.Referenced(doc) {
			add(target)
		}
	}
	for _, f := range s.Facts {
		if f.InManifest() {
			add(f.Doc)
		}
	}
	return out
}
