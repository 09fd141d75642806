package schemadiff

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
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

// TestMarkdownGivesEachCountOnce renders every case of testdata as a
// pull-request comment and checks the line under the heading: it counts
// what the heading does not, and is left out when the heading said it all
// (a comment that reads "3 unannounced breaking changes" twice in a row
// wastes the reader's first glance).
func TestMarkdownGivesEachCountOnce(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/old")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("testdata/golden/*/old")
	if err != nil {
		t.Fatal(err)
	}
	headingOnly := 0
	for _, old := range append(dirs, more...) {
		dir := filepath.Dir(old)
		r := Compare(loadDir(t, old), loadDir(t, filepath.Join(dir, "new")))
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b, Labels{Old: "main:events", New: "events"}); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		lines := strings.Split(b.String(), "\n")
		head, ok := strings.CutPrefix(lines[0], "### warren diff: ")
		if !ok || len(lines) < 3 {
			t.Errorf("%s: no heading:\n%s", dir, b.String())
			continue
		}
		under := lines[2]
		switch {
		case head[0] < '0' || head[0] > '9':
			// "compatible", "no changes": the line under it gives the counts.
		case strings.Contains(under, head):
			t.Errorf("%s: the line under the heading repeats %q:\n%s", dir, head, b.String())
		case strings.HasPrefix(under, "| |"):
			headingOnly++
		case !strings.HasPrefix(under, "Also "):
			t.Errorf("%s: the line under the heading %q is neither the table nor the other counts: %q", dir, head, under)
		}
	}
	if headingOnly == 0 {
		t.Error("no case has changes of one verdict only; the test no longer sees the heading stand alone")
	}
}
