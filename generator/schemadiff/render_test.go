package schemadiff

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestRenderGolden renders the report of testdata/golden/<case>/{old,new}
// in every format and compares it with want.md, want.txt and want.json in
// the same directory. After an intended change of output, regenerate them
// with
//
//	go test ./generator/schemadiff -run TestRenderGolden -update
//
// and read the diff before committing.
func TestRenderGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/golden/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no golden cases under testdata/golden")
	}
	labels := Labels{Old: "main:events", New: "events"}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := Compare(loadDir(t, filepath.Join(dir, "old")), loadDir(t, filepath.Join(dir, "new")))
			formats := map[string]func(*bytes.Buffer) error{
				"want.md":   func(b *bytes.Buffer) error { return r.WriteMarkdown(b, labels) },
				"want.txt":  func(b *bytes.Buffer) error { return r.WriteText(b, labels) },
				"want.json": func(b *bytes.Buffer) error { return r.WriteJSON(b) },
			}
			for file, render := range formats {
				var got bytes.Buffer
				if err := render(&got); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				golden := filepath.Join(dir, file)
				if *update {
					if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), got.String()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", golden, diff)
				}
			}
		})
	}
}
