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
	file    string // keyword file, without .json ("ref", "optional/ecmascript-regex")
	regex   bool   // one of the regular-expression groups (regexFiles), reported apart
	index   int    // in its file
	id      int    // unique in the run: names the fact
	leftOut string // why the group is not generated; "" if it is
}

func (g *group) name() string {
	return fmt.Sprintf("%s/%s.json #%d %q", g.draft, g.file, g.index, g.Description)
}

// regexFiles are the suite's optional tests of ECMA-262 regular
// expressions, run beside the required ones and reported apart.
var regexFiles = []string{"optional/ecmascript-regex.json", "optional/non-bmp-regex.json", "optional/format/regex.json"}

// ownRegexFile holds cases of ECMA-262 patterns that the suite lacks
// (lookaround, named groups, backreferences), in the suite's format, run
// under 2020-12. Their expectations are those of JavaScript's RegExp with
// the u flag.
const ownRegexFile = "testdata/ecma262.json"

// ownRegexDraft labels the groups of ownRegexFile in the figures.
const ownRegexDraft = "warren"

// readSuite reads the required tests of every draft, the regular
// expression tests among the optional ones (regexFiles), and
// ownRegexFile.
func readSuite(t *testing.T) []*group {
	root := suiteDir(t)
	var all []*group
	add := func(path, draft, file string, regex bool) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var groups []*group
		if err := json.Unmarshal(src, &groups); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, g := range groups {
			g.draft, g.file, g.index, g.id, g.regex = draft, file, i, len(all), regex
			g.leftOut = leftOutUpFront(g)
			all = append(all, g)
		}
	}
	for _, d := range drafts {
		files, err := filepath.Glob(filepath.Join(root, d.dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(files)
		for _, f := range files {
			add(f, d.dir, strings.TrimSuffix(filepath.Base(f), ".json"), false)
		}
	}
	// After all the required groups, so that their numbers (which name
	// them in testdata/*.txt) stay as they were.
	for _, d := range drafts {
		for _, f := range regexFiles {
			path := filepath.Join(root, d.dir, filepath.FromSlash(f))
			if _, err := os.Stat(path); err == nil {
				add(path, d.dir, strings.TrimSuffix(f, ".json"), true)
			}
		}
	}
	add(ownRegexFile, ownRegexDraft, "ecma262", true)
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
