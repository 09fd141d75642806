package generator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
)

// FuzzModel builds schema directories from the constructs real schemas
// are made of, and generates from them: allOf, anyOf and oneOf with $ref
// cycles, definitions and $defs, $id URLs and anchors, patternProperties,
// type arrays, nested items and tuples, $refs with siblings, enums, each
// file under a draft of its own. Random bytes seldom stay a schema for
// long; here every input is one (see shapeProgram for how bytes become
// schemas), so the fuzzer spends its time in the loader's resolution and
// the model's merging, naming and cycle detection.
//
// Whatever the shape, generation either succeeds with Go that parses and
// is gofmt'ed, or fails with errors that each name a file and line:col;
// and a second run gives the same bytes.
func FuzzModel(f *testing.F) {
	for _, seed := range shapeSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		fsys := shapeDir(program)
		files, err := generator.Generate(context.Background(), ".", generator.Options{FS: fsys})
		again, err2 := generator.Generate(context.Background(), ".", generator.Options{FS: fsys})
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("a second run differs:\n%v\nfirst:\n%v", err2, err)
		}
		if err != nil {
			checkPositioned(t, err)
			return
		}
		for name, src := range files {
			if string(again[name]) != string(src) {
				t.Fatalf("%s differs on a second run", name)
			}
		}
		var texts [][]byte
		for _, file := range fsys {
			texts = append(texts, file.Data)
		}
		checkGenerated(t, files, schemaTexts(texts...))
	})
}

// shapeSeeds are programs for shapes found in schemas in the wild. Read
// them with shapeGen: the first byte is the fact file's draft (an index
// into shapeDrafts; 0x80 adds a manifest fact), then come the fact's
// root and its definitions a, b and c, the shared file's draft, and its
// definitions x and y; each shape is a letter of shapeOps followed by its
// operands.
var shapeSeeds = []string{
	// A draft-04 root $ref to a host whose arrays hold two children, each
	// {"allOf": [{"$ref": host}], "properties": {}} (this crashed the
	// generator once).
	"\x00R\x01" + "O\x02I\x00R\x02I\x00R\x03" + "M\x40R\x01" + "M\x40R\x01" + "\x00t\x00t\x00",
	// The same with one child (once a false "leads back to itself").
	"\x00R\x01" + "O\x01I\x00R\x02" + "M\x40R\x01" + "t\x00" + "\x00t\x00t\x00",
	// A draft-04 root that is only a $ref, to an object with required
	// properties and an enum.
	"\x00R\x01" + "O\x0ft\x00t\x01E\x00" + "t\x00" + "t\x00" + "\x00t\x00t\x00",
	// An expression tree: a oneOf whose object branch refers back to it.
	"\x04O\x01R\x01" + "N\x01t\x02O\x03t\x00R\x01R\x01" + "t\x00" + "t\x00" + "\x04t\x00t\x00",
	// References across files by path, by path and pointer, and by $id,
	// from 2019-09 into draft-07.
	"\x03O\x03R\x04R\x05R\x06" + "t\x00" + "t\x00" + "t\x00" + "\x02O\x01R\x00" + "E\x00",
	// A cycle through nothing: a -> b -> a.
	"\x04O\x01R\x01" + "R\x02" + "R\x01" + "t\x00" + "\x04t\x00t\x00",
	// patternProperties of a type array with null; additionalProperties
	// holding arrays of nullable objects.
	"\x04O\x02P\x01t\x07" + "DI\x00t\x09\x01" + "t\x00" + "t\x00" + "t\x00" + "\x04t\x00t\x00",
	// A $ref with sibling properties, to a 2019-09 $anchor.
	"\x03O\x01C\x01t\x00\x07" + "XO\x01E\x02\x01" + "t\x00" + "t\x00" + "\x03t\x00t\x00",
	// A draft-07 tuple closed by additionalItems false, and nested arrays.
	"\x02O\x02I\x01t\x00t\x01B\x01I\x00I\x00t\x00" + "t\x00" + "t\x00" + "t\x00" + "\x02t\x00t\x00",
	// A manifest fact into the shared draft-06 file, whose allOf refers
	// back to the file of the other fact.
	"\x84O\x01R\x05" + "t\x00" + "t\x00" + "t\x00" + "\x01M\x01F\x00\x00R\x09" + "U\x01t\x00t\x01",
	// An Iglu-style event under a registry's meta-schema that extends
	// draft-04, its items a $ref into its definitions.
	"\x40O\x02I\x00R\x01E\x00" + "O\x01t\x00" + "t\x00" + "t\x00" + "\x00t\x00t\x00",
	// The same for 2020-12, with a $ref with siblings.
	"\x44O\x01C\x01t\x07\x02" + "t\x00" + "O\x01t\x01" + "t\x00" + "\x04t\x00t\x00",
	// A subschema with an $id of its own, referred to by that $id.
	"\x04O\x01R\x0a" + "XO\x01t\x00\x00" + "t\x00" + "t\x00" + "\x04t\x00t\x00",
}

// shapeOps are the operations of a shape program, one byte each; a byte
// that is no letter here stands for shapeOps[byte % len]. Byte 0, which a
// program reads once it has run out, is a plain type.
const shapeOps = "tOIAUNRPECBFDXM"

// shapeDir turns a program into a schema directory: a fact file (its
// draft, then its root shape and definitions a, b and c) and a shared
// file declaring an $id (its draft, definition x, $defs y). The first
// byte's high bit also declares a fact in the manifest that points into
// the shared file; bit 6 makes the fact file name a registry's
// meta-schema in the manner of Iglu's (the manifest's metaSchemas, a
// vendored meta-schema that extends the fact file's draft, and a "self"
// keyword).
func shapeDir(program []byte) fstest.MapFS {
	g := &shapeGen{src: program}
	flags := g.next()
	g.draft = shapeDrafts[int(flags&0x3f)%len(shapeDrafts)]
	root := g.shape()
	fact, ok := root.(map[string]any)
	if !ok {
		fact = map[string]any{"allOf": []any{root}}
	}
	fact["$schema"] = g.draft.url
	var meta map[string]any
	if flags&0x40 != 0 {
		meta = map[string]any{
			"$schema": shapeMetaURL,
			"allOf": []any{
				map[string]any{"required": []any{"self"}, "properties": map[string]any{"self": map[string]any{"type": "object", "required": []any{"version"}}}},
				map[string]any{"$ref": g.draft.url},
			},
		}
		fact["$schema"] = shapeMetaURL
		fact["self"] = map[string]any{"vendor": "com.example", "name": "shape", "format": "jsonschema", "version": "1-0-0"}
	}
	fact["x-routing-key"] = "shape.changed"
	fact[g.draft.defs] = map[string]any{"a": g.shape(), "b": g.shape(), "c": g.shape()}

	g.draft = shapeDrafts[int(g.next())%len(shapeDrafts)]
	// Both keywords for definitions, as files in the wild have them
	// whatever their draft: the $refs into this file need not depend on
	// its draft.
	shared := map[string]any{
		"$schema":     g.draft.url,
		g.draft.id:    shapeSharedID,
		"definitions": map[string]any{"x": g.shape()},
		"$defs":       map[string]any{"y": g.shape()},
	}
	manifest := map[string]any{"package": "p", "consumers": map[string]any{"c": map[string]any{"bindings": []any{"#"}}}}
	if flags&0x80 != 0 {
		manifest["facts"] = map[string]any{"shared.changed": map[string]any{"schema": shapeSharedID + "#/definitions/x"}}
	}
	encode := func(v any) *fstest.MapFile {
		src, _ := json.MarshalIndent(v, "", "  ")
		return &fstest.MapFile{Data: src}
	}
	dir := fstest.MapFS{fuzzFact: encode(fact), fuzzShared: encode(shared)}
	if meta != nil {
		manifest["metaSchemas"] = map[string]any{shapeMetaURL: map[string]any{"schema": fuzzMeta}}
		dir[fuzzMeta] = encode(meta)
	}
	dir[load.ManifestFile] = encode(manifest)
	return dir
}

const (
	shapeSharedID = "https://schemas.example.com/common/money.json"
	shapeMetaURL  = "http://registry.example.com/schemas/self-desc/jsonschema/1-0-0#"
)

// shapeDraft is what a shape program needs to know of a draft.
type shapeDraft struct {
	url, defs, id string
	version       int
}

var shapeDrafts = []shapeDraft{
	{"http://json-schema.org/draft-04/schema#", "definitions", "id", 4},
	{"http://json-schema.org/draft-06/schema#", "definitions", "$id", 6},
	{"http://json-schema.org/draft-07/schema#", "definitions", "$id", 7},
	{"https://json-schema.org/draft/2019-09/schema", "$defs", "$id", 2019},
	{"https://json-schema.org/draft/2020-12/schema", "$defs", "$id", 2020},
}

// shapeGen runs a shape program.
type shapeGen struct {
	src   []byte
	pos   int
	draft shapeDraft
	depth int
}

func (g *shapeGen) next() byte {
	if g.pos >= len(g.src) {
		return 0
	}
	g.pos++
	return g.src[g.pos-1]
}

// pick returns one of options, chosen by the next byte.
func pick[T any](g *shapeGen, options ...T) T { return options[int(g.next())%len(options)] }

// shape reads one operation and its operands and returns the schema.
func (g *shapeGen) shape() any {
	op := g.next()
	i := strings.IndexByte(shapeOps, op)
	if i < 0 {
		i = int(op) % len(shapeOps)
	}
	if g.depth >= 6 {
		i = 0 // deep enough: a plain type ends the branch
	}
	g.depth++
	defer func() { g.depth-- }()
	switch shapeOps[i] {
	case 'O':
		return g.object()
	case 'I':
		return g.array()
	case 'A', 'U', 'N':
		kw := map[byte]string{'A': "allOf", 'U': "anyOf", 'N': "oneOf"}[shapeOps[i]]
		n := 1 + int(g.next())%3
		var list []any
		for range n {
			list = append(list, g.shape())
		}
		return map[string]any{kw: list}
	case 'R':
		return map[string]any{"$ref": g.ref()}
	case 'C':
		// A $ref with siblings: applied like allOf from 2019-09, ignored before.
		s := g.object()
		s["$ref"] = g.ref()
		return s
	case 'M':
		// Properties of its own next to an allOf: a schema extending another.
		s := g.object()
		s["allOf"] = []any{g.shape()}
		return s
	case 'P':
		pattern := pick(g, "^x-", "^[a-z]+$", ".*", "^(?!x)", "[")
		return map[string]any{"type": "object", "patternProperties": map[string]any{pattern: g.shape()}}
	case 'E':
		return pick(g,
			map[string]any{"enum": []any{"a", "b"}},
			map[string]any{"enum": []any{json.Number("1"), json.Number("2")}},
			map[string]any{"enum": []any{nil, "a"}},
			map[string]any{"const": "x"},
			map[string]any{"type": "string", "enum": []any{"a", json.Number("1")}},
		)
	case 'B':
		return pick(g, true, false)
	case 'F':
		return map[string]any{"type": pick[any](g, "string", []any{"string", "null"}), "format": pick(g, "date-time", "uuid", "email")}
	case 'D':
		var extra any = g.shape()
		if g.next()%2 == 0 {
			extra = false
		}
		return map[string]any{"type": "object", "additionalProperties": extra}
	case 'X':
		s, ok := g.shape().(map[string]any)
		if !ok {
			s = map[string]any{}
		}
		if g.next()%2 == 0 {
			s[g.draft.id] = "inner.json"
		} else if g.draft.version >= 2019 {
			s["$anchor"] = "anchor-a"
		} else {
			s[g.draft.id] = "#anchor-a"
		}
		return s
	}
	return map[string]any{"type": pick[any](g, "string", "integer", "number", "boolean", "null", "object", "array",
		[]any{"string", "null"}, []any{"integer", "string"}, []any{"object", "null"})}
}

// object reads a byte: the number of properties (bits 0-1), which of
// them are required (bits 2-5), and whether "type" is left out (bit 6);
// then each property's shape.
func (g *shapeGen) object() map[string]any {
	b := g.next()
	names := []string{"id", "name", "children"}
	props := map[string]any{}
	var required []any
	for i := range int(b%4) % len(names) {
		props[names[i]] = g.shape()
		if b>>(2+i)&1 == 1 {
			required = append(required, names[i])
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if b&0x40 != 0 {
		delete(s, "type")
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// array reads its form (one items schema, or a tuple of two in the
// draft's own keywords), then its shapes.
func (g *shapeGen) array() any {
	if g.next()%2 == 0 {
		return map[string]any{"type": "array", "items": g.shape()}
	}
	tuple := []any{g.shape(), g.shape()}
	if g.draft.version >= 2020 {
		return map[string]any{"type": "array", "prefixItems": tuple, "items": g.shape()}
	}
	return map[string]any{"type": "array", "items": tuple, "additionalItems": g.shape()}
}

// ref reads which $ref to write: to the fact file's root or definitions,
// to the shared file by path or by $id, to an anchor, to a property, or
// to places that do not resolve.
func (g *shapeGen) ref() string {
	shared := "../common/money.json"
	return pick(g,
		"#",
		"#/"+g.draft.defs+"/a",
		"#/"+g.draft.defs+"/b",
		"#/"+g.draft.defs+"/c",
		shared,
		shared+"#/definitions/x",
		shapeSharedID+"#/$defs/y",
		"#anchor-a",
		"#/properties/id",
		"../order/fact.json",
		"inner.json",
		"#/"+g.draft.defs+"/missing",
		"../../outside.json",
	)
}
