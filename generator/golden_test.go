package generator_test

import (
	"context"
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator"
)

var update = flag.Bool("update", false, "rewrite the golden files under ../golden from the current generator")

// goldenDir holds one directory per case: events/ is the input schema
// directory; want/ is the exact generated package (it compiles with the
// rest of the module), or stderr.txt holds the exact error for a case that
// must fail.
const goldenDir = "../golden"

// TestGolden regenerates every case under golden/ and compares the result
// with the committed files, reporting a (-want +got) diff per file and
// counting missing or extra files as failures.
//
// After an intended change, regenerate with
//
//	go test ./generator -run TestGolden -update
//
// (or `make golden`) and read the diff before committing.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(goldenDir, c.Name())
		if _, err := os.Stat(filepath.Join(dir, "events")); err != nil {
			continue
		}
		n++
		t.Run(c.Name(), func(t *testing.T) { runGolden(t, dir) })
	}
	if n == 0 {
		t.Fatal("no golden cases found")
	}
}

// goldenImportPath is the import path of a case's want/ package, a
// package of this module, which its test kit imports.
func goldenImportPath(dir string) string {
	return "github.com/warrenbus/warren/golden/" + filepath.Base(dir) + "/want"
}

func runGolden(t *testing.T, dir string) {
	files, err := generator.Generate(context.Background(), filepath.Join(dir, "events"), generator.Options{ImportPath: goldenImportPath(dir)})
	stderrPath := filepath.Join(dir, "stderr.txt")
	wantDir := filepath.Join(dir, "want")
	_, statErr := os.Stat(stderrPath)
	mustFail := statErr == nil
	if *update {
		updateGolden(t, dir, files, err)
		return
	}
	if mustFail {
		want, _ := os.ReadFile(stderrPath)
		if err == nil {
			t.Fatalf("Generate succeeded; want the error in %s:\n%s", stderrPath, want)
		}
		if diff := cmp.Diff(string(want), err.Error()+"\n"); diff != "" {
			t.Errorf("error differs from %s (-want +got):\n%s", stderrPath, diff)
		}
		return
	}
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	compareDir(t, wantDir, files)
}

// compareDir compares generated files with the .go files of dir and of
// its subdirectories (the test kit's), one level down.
func compareDir(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("read %s: %v (run with -update to create it)", dir, err)
	}
	onDisk := goFiles(t, dir)
	for _, name := range onDisk {
		got, ok := files[name]
		if !ok {
			t.Errorf("%s: in %s but no longer generated", name, dir)
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s differs (-want +got):\n%s", name, diff)
		}
	}
	for name := range files {
		if !slices.Contains(onDisk, name) {
			t.Errorf("%s: generated but missing from %s", name, dir)
		}
	}
}

// goFiles returns the generated .go files of dir and of its immediate
// subdirectories, as slash-separated names relative to dir ("x.go",
// "xtest/kit.go"); tests beside them (_test.go) are not generated.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out, subs []string
	read := func(sub string) {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			switch {
			case e.IsDir():
				if sub == "" {
					subs = append(subs, e.Name())
				}
			case strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go"):
				out = append(out, path.Join(sub, e.Name()))
			}
		}
	}
	read("")
	for _, sub := range subs {
		read(sub)
	}
	return out
}

func updateGolden(t *testing.T, dir string, files map[string][]byte, genErr error) {
	t.Helper()
	wantDir := filepath.Join(dir, "want")
	stderrPath := filepath.Join(dir, "stderr.txt")
	// Remove the old output first: a golden whose output is now empty (or
	// now an error, or without a kit) must not linger.
	for _, name := range goFiles(t, wantDir) {
		p := filepath.Join(wantDir, filepath.FromSlash(name))
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if sub := filepath.Dir(p); sub != wantDir {
			os.Remove(sub) // only succeeds when empty
		}
	}
	os.Remove(stderrPath)
	if genErr != nil {
		os.Remove(wantDir) // only succeeds when empty
		if err := os.WriteFile(stderrPath, []byte(genErr.Error()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(wantDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(wantDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExampleUpToDate fails when examples/catalogue/catalogueevents is not
// what `make generate` would write from examples/catalogue/events.
func TestExampleUpToDate(t *testing.T) {
	files, err := generator.Generate(context.Background(), "../examples/catalogue/events", generator.Options{ImportPath: "github.com/warrenbus/warren/examples/catalogue/catalogueevents"})
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, "../examples/catalogue/catalogueevents", files)
}

// TestBenchUpToDate fails when bench/benchevents is not what `make
// generate` would write from bench/events: the benchmarks measure what the
// generator makes today.
func TestBenchUpToDate(t *testing.T) {
	files, err := generator.Generate(context.Background(), "../bench/events", generator.Options{ImportPath: "github.com/warrenbus/warren/bench/benchevents"})
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, "../bench/benchevents", files)
}

// TestDeterministic generates the example twice and expects identical
// bytes: map iteration or pointer order must never leak into output.
func TestDeterministic(t *testing.T) {
	first, err := generator.Generate(context.Background(), "../examples/catalogue/events", generator.Options{ImportPath: "example.com/catalogueevents"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := generator.Generate(context.Background(), "../examples/catalogue/events", generator.Options{ImportPath: "example.com/catalogueevents"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("second run differs:\n%s", diff)
		}
	}
}
