package generator_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator"
)

// The methods with which a generated type reads, writes and checks itself.
var codecMethods = []string{"CodecFields", "DecodeJSON", "EncodeJSON", "Validate", "MarshalJSON", "UnmarshalJSON"}

// receiverProblems returns, for Go source files (name -> content), every
// codec method of a struct type whose receiver breaks the rule
// GENERATED.md states: a struct's methods take a pointer but MarshalJSON,
// which takes the value, whichever way warren wrote the struct. Any type's
// DecodeJSON and UnmarshalJSON take a pointer. methods is what each type
// has, "T.M" or "*T.M".
func receiverProblems(t *testing.T, files map[string][]byte) (problems, methods []string) {
	t.Helper()
	fset := token.NewFileSet()
	structs := map[string]bool{}
	type method struct {
		file, recv, name string
		ptr              bool
	}
	var all []method
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if _, ok := ts.Type.(*ast.StructType); ok {
							structs[ts.Name.Name] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || !slices.Contains(codecMethods, d.Name.Name) {
					continue
				}
				m := method{file: name, name: d.Name.Name}
				switch x := d.Recv.List[0].Type.(type) {
				case *ast.StarExpr:
					m.recv, m.ptr = x.X.(*ast.Ident).Name, true
				case *ast.Ident:
					m.recv = x.Name
				}
				all = append(all, m)
			}
		}
	}
	for _, m := range all {
		spelled := m.recv + "." + m.name
		if m.ptr {
			spelled = "*" + spelled
		}
		methods = append(methods, spelled)
		var wantPtr bool
		switch {
		case m.name == "DecodeJSON" || m.name == "UnmarshalJSON":
			wantPtr = true
		case !structs[m.recv]:
			continue // an enum's or defined type's, on the value for users to convert to
		default:
			wantPtr = m.name != "MarshalJSON"
		}
		if m.ptr != wantPtr {
			problems = append(problems, m.file+": "+spelled)
		}
	}
	slices.Sort(problems)
	slices.Sort(methods)
	return problems, methods
}

// Two facts, one that warren writes as a codec.Shape and one it spells
// out (a map property is something a Shape cannot describe), have their
// methods on the same receivers: a schema edit that changes how warren
// writes a fact must not break code that calls its Validate, or assigns
// a *BookBorrowed to an interface{ Validate() error }.
func TestStructMethodsTakeAPointerWhicheverWayWritten(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"warren.json":        `{"package": "libevents"}`,
		"book/borrowed.json": `{"x-routing-key": "book.borrowed", "title": "BookBorrowed", "type": "object", "required": ["isbn"], "properties": {"isbn": {"type": "string", "minLength": 10}}}`,
		"book/returned.json": `{"x-routing-key": "book.returned", "title": "BookReturned", "type": "object", "required": ["isbn"], "properties": {"isbn": {"type": "string", "minLength": 10}, "notes": {"type": "object", "additionalProperties": {"type": "string"}}}}`,
	})
	files, err := generator.Generate(context.Background(), dir, generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	problems, methods := receiverProblems(t, files)
	for _, p := range problems {
		t.Errorf("%s: a struct's methods take a pointer, its MarshalJSON the value", p)
	}
	// Both ways of writing a struct are exercised: a Shape has
	// CodecFields, a spelled-out struct DecodeJSON.
	for _, want := range []string{"*BookBorrowed.CodecFields", "*BookReturned.DecodeJSON", "*BookBorrowed.Validate", "*BookReturned.Validate", "BookBorrowed.MarshalJSON", "BookReturned.MarshalJSON"} {
		if !slices.Contains(methods, want) {
			t.Errorf("no method %s; the generated methods: %s", want, strings.Join(methods, ", "))
		}
	}
	if slices.Contains(methods, "*BookBorrowed.DecodeJSON") || slices.Contains(methods, "*BookReturned.CodecFields") {
		t.Errorf("the two facts are written the same way, so the test no longer compares the two: %s", strings.Join(methods, ", "))
	}
}

// Every golden package keeps the same rule, whatever its schemas hold
// (unions, patternProperties, recursion, versions, ...).
func TestGoldenStructMethodsTakeAPointer(t *testing.T) {
	wants, err := filepath.Glob(filepath.Join(goldenDir, "*", "want"))
	if err != nil || len(wants) == 0 {
		t.Fatalf("no golden packages: %v", err)
	}
	for _, want := range wants {
		files := map[string][]byte{}
		err := filepath.WalkDir(want, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			src, err := os.ReadFile(p)
			files[p] = src
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		problems, _ := receiverProblems(t, files)
		for _, p := range problems {
			t.Errorf("%s: a struct's methods take a pointer, its MarshalJSON the value", p)
		}
	}
}
