package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator/load"
)

// suiteDir is the official JSON Schema Test Suite, read in place beside
// the repository; never copied into it.
func suiteDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "jsonschema-test-suite", "tests")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("JSON Schema Test Suite: %v", err)
		}
		t.Skipf("JSON Schema Test Suite not found: %v", err)
	}
	return dir
}

// drafts are the suite's directories, oldest first.
var drafts = []struct {
	dir   string
	draft *load.Draft
}{
	{"draft4", load.Draft4},
	{"draft6", load.Draft6},
	{"draft7", load.Draft7},
	{"draft2019-09", load.Draft2019},
	{"draft2020-12", load.Draft2020},
}

// group is one entry of a suite file: a schema and cases of data.
type group struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`

	draft   string // suite directory
	file    string // keyword file, without .json ("ref")
	index   int    // in its file
	id      int    // unique in the run: names the fact
	leftOut string // why the group is not generated; "" if it is
}

func (g *group) name() string {
	return fmt.Sprintf("%s/%s.json #%d %q", g.draft, g.file, g.index, g.Description)
}

// readSuite reads the required tests of every draft (not optional/).
func readSuite(t *testing.T) []*group {
	root := suiteDir(t)
	var all []*group
	for _, d := range drafts {
		files, err := filepath.Glob(filepath.Join(root, d.dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(files)
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []*group
			if err := json.Unmarshal(src, &groups); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for i, g := range groups {
				g.draft, g.file, g.index, g.id = d.dir, strings.TrimSuffix(filepath.Base(f), ".json"), i, len(all)
				g.leftOut = leftOutUpFront(g)
				all = append(all, g)
			}
		}
	}
	return all
}

// remote matches references that need the suite's remotes/ served over
// HTTP, or a meta-schema fetched: warren never fetches a schema.
var remote = regexp.MustCompile(`localhost:1234|"\$ref":\s*"https?://json-schema\.org/`)

// leftOutUpFront says why a group is not tried at all.
func leftOutUpFront(g *group) string {
	if remote.Match(g.Schema) {
		return "refers to a schema outside the directory (the suite's remotes, or a meta-schema by URL): warren never fetches schemas"
	}
	return ""
}

// ids lists the $id and id values of a group's schema, so that groups that
// declare the same URI go into different directories.
func (g *group) ids() []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if s, ok := sub.(string); ok && (k == "$id" || k == "id") && !strings.HasPrefix(s, "#") {
					out = append(out, s)
				}
				walk(sub)
			}
		case []any:
			for _, sub := range x {
				walk(sub)
			}
		}
	}
	var v any
	_ = json.Unmarshal(g.Schema, &v)
	walk(v)
	return out
}
