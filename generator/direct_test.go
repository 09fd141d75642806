package generator_test

import (
	"context"
	"go/format"
	"os"
	"path/filepath"
	"testing"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
)

// TestDirectOutputIsGofmts generates as warren generate does, without
// comparing each file with jennifer's and go/format's rendering
// (gogen.VerifyLayout off), and checks that go/format leaves every file as
// it is: the layout written directly (gofile) is gofmt's, alignment of
// columns included, for 300 synthetic facts with their test kit and for
// every golden case. The other tests of this package compare each file
// with jennifer's rendering as well.
func TestDirectOutputIsGofmts(t *testing.T) {
	gogen.VerifyLayout = false
	defer func() { gogen.VerifyLayout = true }()
	dirs := map[string]string{writeSynthetic(t, 300): "github.com/warrenbus/warren/synthetic"}
	cases, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		dir := filepath.Join(goldenDir, c.Name())
		if _, err := os.Stat(filepath.Join(dir, "events")); err == nil {
			dirs[filepath.Join(dir, "events")] = goldenImportPath(dir)
		}
	}
	checked := 0
	for dir, importPath := range dirs {
		files, err := generator.Generate(context.Background(), dir, generator.Options{ImportPath: importPath})
		if err != nil {
			continue // an error case: TestGolden checks its message
		}
		for name, src := range files {
			want, err := format.Source(src)
			if err != nil {
				t.Errorf("%s: %s: %v", dir, name, err)
				continue
			}
			if string(want) != string(src) {
				t.Errorf("%s: %s is not as gofmt lays it out", dir, name)
			}
			checked++
		}
	}
	if checked < 300 {
		t.Errorf("checked %d files; want the synthetic package's at least", checked)
	}
}
