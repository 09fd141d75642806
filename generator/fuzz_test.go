package generator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/generator/load"
)

// The fuzz targets put the fuzzed bytes at these paths of a schema
// directory, next to a shared definition that seeds from the golden cases
// refer to.
const (
	fuzzFact   = "order/fact.json"
	fuzzShared = "common/money.json"
	fuzzMeta   = "vendor/meta.json" // a meta-schema of the manifest's metaSchemas (FuzzModel)
)

const fuzzMoney = `{"title": "Money", "type": "object", "required": ["amount"],
  "properties": {"amount": {"type": "integer"}, "currency": {"type": "string", "enum": ["EUR", "USD"]}},
  "$defs": {"currency": {"type": "string"}}}`

// hostileFacts hold schema text that tries to leave its comment or string
// literal, or to become an odd identifier.
var hostileFacts = []string{
	`{"x-routing-key": "a.b", "type": "object", "description": "x\nfunc Evil() { panic(1) }\n", "properties": {"s": {"type": "string", "description": "*/ func Evil() {} /*"}}}`,
	`{"x-routing-key": "a.b", "type": "object", "title": "A\u2028func Evil() {}", "properties": {"e": {"enum": ["\" + evil() + \"", "` + "`" + `); evil(); (` + "`" + `"], "default": "\"; evil(); \""}}}`,
	`{"x-routing-key": "a.b", "type": "object", "properties": {"x\ny": {"type": "string"}, "\\u00e9t\u00e9": {"type": "integer", "default": 1e400}, "0": {"const": -9223372036854775809}}}`,
	`{"x-routing-key": "a.b", "type": "object", "properties": {"u": {"oneOf": [{"type": "string", "title": "func"}, {"type": "integer", "title": "type"}]}, "r": {"$ref": "#"}}}`,
	`{"x-routing-key": "a.b", "type": "object", "properties": {"d": {"$ref": "../common/money.json#/$defs/currency", "description": "\r\n//go:generate rm -rf /\r\n"}}}`,
	"{\"x-routing-key\": \"a.b\", \"type\": \"object\", \"description\": \"nul \\u0000 bom \\ufeff bad \xff\"}",
	// Bounds beyond float64 (its infinities) and at int64's edges.
	`{"x-routing-key": "a.b", "type": "object", "properties": {"f": {"type": "number", "maximum": 1e400, "minimum": -1e400}, "n": {"type": "integer", "exclusiveMinimum": 9223372036854775807}, "o": {"type": "object", "properties": {"g": {"type": "number", "exclusiveMaximum": 1e999}}}}}`,
}

// fuzzSeeds adds every schema file of the golden cases with its case's
// manifest, and the hostile facts with a manifest that consumes them.
func fuzzSeeds(f *testing.F) {
	cases, err := filepath.Glob("../golden/*/events")
	if err != nil {
		f.Fatal(err)
	}
	for _, dir := range cases {
		manifest, _ := os.ReadFile(filepath.Join(dir, load.ManifestFile))
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".json" || d.Name() == load.ManifestFile {
				return err
			}
			src, err := os.ReadFile(p)
			f.Add(src, manifest)
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	for _, src := range hostileFacts {
		f.Add([]byte(src), []byte(`{"package": "p", "consumers": {"c": {"bindings": ["#"], "description": "*/ x\nfunc Evil() {}"}}}`))
	}
	f.Add([]byte(`{}`), []byte(`{"package": "p", "consumers": {"c": {"bindings": ["`+strings.Repeat("#.", 20)+`x"]}}}`))
}

func fuzzDir(fact, manifest []byte) fstest.MapFS {
	return fstest.MapFS{
		load.ManifestFile: {Data: manifest},
		fuzzFact:          {Data: fact},
		fuzzShared:        {Data: []byte(fuzzMoney)},
	}
}

// FuzzLoad loads arbitrary bytes as a fact file and as warren.json: it
// must not panic, and anything wrong must come back as positioned errors.
func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, fact, manifest []byte) {
		s, err := load.LoadFS(context.Background(), fuzzDir(fact, manifest))
		if err != nil {
			checkPositioned(t, err)
			return
		}
		if s.Manifest == nil {
			t.Fatal("loaded without a manifest")
		}
		// Both files are schemas, unless the manifest's metaSchemas make
		// one a meta-schema.
		want := map[string]bool{fuzzFact: true, fuzzShared: true}
		for _, ms := range s.Manifest.MetaSchemas {
			delete(want, ms.File)
		}
		if len(s.Docs) != len(want) {
			t.Fatalf("loaded %d schema files; want %d", len(s.Docs), len(want))
		}
	})
}

// FuzzGenerate generates from arbitrary bytes as a fact file and as
// warren.json: either positioned errors come back, or Go files that parse,
// are gofmt'ed, carry the generated-code header, and hold schema text only
// in comments and string literals.
func FuzzGenerate(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, fact, manifest []byte) {
		files, err := generator.Generate(context.Background(), ".", generator.Options{FS: fuzzDir(fact, manifest)})
		if err != nil {
			checkPositioned(t, err)
			return
		}
		checkGenerated(t, files, schemaTexts(fact, manifest))
	})
}

// checkGenerated checks that every generated file parses, is gofmt'ed,
// starts with the generated-code header, and holds none of texts as code.
func checkGenerated(t *testing.T, files map[string][]byte, texts []string) {
	t.Helper()
	for name, src := range files {
		if _, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments); err != nil {
			t.Fatalf("%s does not parse: %v\n%s", name, err, src)
		}
		if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
			t.Fatalf("%s is not gofmt'ed (%v)", name, err)
		}
		if !bytes.HasPrefix(src, []byte(gogen.GeneratedHeader+"\n")) {
			t.Fatalf("%s does not start with the generated-code header", name)
		}
		if leak := leakedText(src, texts); leak != "" {
			t.Fatalf("%s: schema text %q appears as code:\n%s", name, leak, src)
		}
	}
}

// FuzzGenerateText generates from valid JSON with arbitrary text where
// schemas put names and prose: a title, a description, a property and
// definition name, an enum value (also the default) and a consumer. Random
// bytes rarely stay valid JSON for long; this reaches naming, comments and
// literals with any text. The checks are those of FuzzGenerate.
func FuzzGenerateText(f *testing.F) {
	f.Add("OrderPlaced", "A customer placed an order.", "line_items", "EUR", "order-mailer")
	f.Add("A\u2028func Evil() {}", "x\nfunc Evil() {}\n*/", "x\ny", "\" + evil() + \"", "c")
	f.Add("type", "//go:build ignore", "validate", "", "a.b")
	f.Add("Évènement", "*/ func Evil() {}\r\n//go:generate rm -rf /\u0085x", "größe", "a`b\"c\\", "mailer")
	f.Fuzz(func(t *testing.T, title, description, property, value, consumer string) {
		fact, err := json.Marshal(map[string]any{
			"x-routing-key": "order.placed",
			"type":          "object",
			"title":         title,
			"description":   description,
			"required":      []string{property},
			"properties": map[string]any{
				property: map[string]any{"description": description, "enum": []string{value, "other"}, "default": value},
				"ref":    map[string]any{"$ref": "#/$defs/" + strings.ReplaceAll(strings.ReplaceAll(property, "~", "~0"), "/", "~1")},
				"union":  map[string]any{"oneOf": []any{map[string]any{"type": "string", "title": value}, map[string]any{"type": "integer"}}},
			},
			"$defs": map[string]any{property: map[string]any{"type": "object", "title": value, "properties": map[string]any{value: map[string]any{"type": "string"}}}},
		})
		if err != nil {
			t.Fatal(err) // json.Marshal writes invalid UTF-8 as U+FFFD; nothing else fails
		}
		manifest, _ := json.Marshal(map[string]any{
			"package":     "p",
			"description": description,
			"consumers":   map[string]any{consumer: map[string]any{"bindings": []string{"order.*"}, "description": description}},
		})
		files, err := generator.Generate(context.Background(), ".", generator.Options{FS: fuzzDir(fact, manifest)})
		if err != nil {
			checkPositioned(t, err)
			return
		}
		checkGenerated(t, files, schemaTexts(fact, manifest))
	})
}

// checkPositioned fails unless err lists problems in the input, each
// naming its file and line:column.
func checkPositioned(t *testing.T, err error) {
	t.Helper()
	var list load.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error is not a list of problems in the input: %v", err)
	}
	for _, e := range list {
		if !slices.Contains([]string{load.ManifestFile, fuzzFact, fuzzShared, fuzzMeta}, e.File) || e.Line < 1 || e.Col < 1 {
			t.Fatalf("error without file and position: %q", e.Error())
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(list) {
		t.Fatalf("%d errors print as %d lines:\n%s", len(list), len(lines), err)
	}
}

// schemaTexts returns every string (property names included) in the JSON
// of the input files.
func schemaTexts(files ...[]byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	for _, src := range files {
		var v any
		if json.Unmarshal(src, &v) == nil {
			walk(v)
		}
	}
	return out
}

// leakedText returns the first piece of schema text that reads as Go code
// in src outside comments and string literals, or "". Schema text escapes
// a comment or literal after a line break, quote or slash, so each piece
// between those is scanned as Go; a piece that makes at least three tokens,
// one of them punctuation or a declaring keyword, must not appear as a
// run of tokens in the code. (Text that copies the generator's own code,
// such as "Validate() error", would be a false alarm.)
func leakedText(src []byte, texts []string) string {
	code := strings.Join(codeTokens(src), " ")
	for _, text := range texts {
		for _, piece := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("\n\r\v\f\u0085\u2028\u2029\"`'\\/", r) }) {
			tokens := codeTokens([]byte(piece))
			if len(tokens) >= 3 && slices.ContainsFunc(tokens, isStructural) && strings.Contains(" "+code+" ", " "+strings.Join(tokens, " ")+" ") {
				return piece
			}
		}
	}
	return ""
}

func isStructural(tok string) bool {
	switch tok {
	case "(", ")", "{", "}", ";", "=", ":=", "func", "var", "const", "type", "import", "package":
		return true
	}
	return false
}

// codeTokens scans src as Go and returns its tokens, leaving out comments,
// string and character literals, and the semicolons the scanner inserts.
func codeTokens(src []byte) []string {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, func(token.Position, string) {}, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		switch {
		case tok == token.EOF:
			return out
		case tok == token.STRING, tok == token.CHAR, tok == token.SEMICOLON && lit == "\n":
		case lit != "":
			out = append(out, lit)
		default:
			out = append(out, tok.String())
		}
	}
}

// TestLeakedText checks the check FuzzGenerate relies on: text is found
// when it is code, not when it sits in a comment or a string.
func TestLeakedText(t *testing.T) {
	texts := []string{"x\nfunc Evil() { panic(1) }", "Validate", "a.b"}
	leaked := "package p\n\n// x\nfunc Evil() { panic(1) }\n"
	if got := leakedText([]byte(leaked), texts); got != "func Evil() { panic(1) }" {
		t.Errorf("leakedText(code) = %q, want the injected function", got)
	}
	for _, safe := range []string{
		"package p\n\n// x\n// func Evil() { panic(1) }\nvar v = 1\n",
		"package p\n\nvar s = \"x\\nfunc Evil() { panic(1) }\"\n",
		"package p\n\nvar s = `func Evil() { panic(1) }`\n",
	} {
		if got := leakedText([]byte(safe), texts); got != "" {
			t.Errorf("leakedText(%q) = %q, want none", safe, got)
		}
	}
}
