package gogen_test

import (
	"bytes"
	"context"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/internal/synthetic"
)

// TestLayoutKeepsGofmtOutput lays out every committed generated file (the
// goldens, the examples' and the benchmarks' packages), all of them
// gofmt's output: where layout knows a file's constructs it must give the
// file back byte for byte. The generator's tests compare layout with
// go/format on the unformatted source of every file they generate
// (VerifyLayout); this covers what they do not generate. Every file is
// laid out a second time in memory kept from the files before it, as
// generation does, and must come out the same.
func TestLayoutKeepsGofmtOutput(t *testing.T) {
	laid, known := 0, 0
	reusing := gogen.LayoutReusing()
	for _, root := range []string{"../../golden", "../../examples", "../../bench"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "out" {
				return filepath.SkipDir // what benchmarks write, not committed
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !bytes.HasPrefix(src, []byte(gogen.GeneratedHeader+"\n")) {
				return nil
			}
			known++
			out, ok := gogen.Layout(src)
			again, okAgain := reusing(src)
			if okAgain != ok || !bytes.Equal(again, out) {
				t.Errorf("%s: laid out in reused memory (ok %v), the file differs from its layout in new memory (ok %v)", path, okAgain, ok)
			}
			if !ok {
				return nil
			}
			laid++
			if !bytes.Equal(out, src) {
				t.Errorf("%s: layout changes gofmt's output:\n%s", path, firstDiff(out, src))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if known == 0 || laid < known/2 {
		t.Errorf("layout knew %d of %d generated files; want most", laid, known)
	}
	t.Logf("layout knew %d of %d generated files", laid, known)
}

// TestLayoutKnowsFactFiles guards the generator's speed: the synthetic
// facts' files, what most of a large package is, are laid out without
// go/format.
func TestLayoutKnowsFactFiles(t *testing.T) {
	dir := t.TempDir()
	if err := synthetic.Write(dir, 20); err != nil {
		t.Fatal(err)
	}
	files, err := generator.Generate(context.Background(), dir, generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		switch name {
		case "warren.go":
			continue // a subtraction: go/format's
		}
		if out, ok := gogen.Layout(src); !ok {
			t.Errorf("%s: not laid out directly", name)
		} else if !bytes.Equal(out, src) {
			t.Errorf("%s: layout changes gofmt's output:\n%s", name, firstDiff(out, src))
		}
	}
}

func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "got:  " + g[i] + "\nwant: " + w[i]
		}
	}
	return "lengths differ"
}

// TestLayoutTrailingFieldComments: a comment after a field's tag ends the
// line as gofmt writes it, the tags before it a column of their own among
// the lines that have one, whether or not other fields have a comment.
func TestLayoutTrailingFieldComments(t *testing.T) {
	src := []byte(gogen.GeneratedHeader + `

package p

type T struct {
	A string ` + "`json:\"a\"`" + `
	LongName *int64 ` + "`json:\"long_name,omitzero\"`" + ` // the first comment
	B bool ` + "`json:\"b\"`" + ` // another

	Extra map[string]string ` + "`json:\"-\"`" + ` // kept
	Last int ` + "`json:\"last\"`" + `
}
`)
	want, err := format.Source(src)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := gogen.Layout(src)
	if !ok {
		t.Fatal("not laid out directly")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("layout differs from gofmt:\n%s", firstDiff(got, want))
	}
}
