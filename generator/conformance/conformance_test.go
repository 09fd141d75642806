package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
)

var update = flag.Bool("update", false, "rewrite the figures in docs/CONFORMANCE.md and testdata/disagreements.txt")

const modulePath = "github.com/warrenbus/warren/generator/conformance"

// TestSuite generates every group of the suite as a fact whose property
// "value" is the group's schema, compiles all of it into one program, and
// runs each test case through what a consumer does with a payload:
// validate it against the embedded schema, decode it into the generated
// type. A case agrees when valid data is accepted (and still validates
// once encoded again from the Go value) and invalid data is refused.
func TestSuite(t *testing.T) {
	groups := readSuite(t)
	// A fixed directory, so that the build cache keeps what did not
	// change since the last run: compiling is most of the test's time.
	run := filepath.Join("testdata", "run")
	if err := os.RemoveAll(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })

	batches := batch(groups)
	var pkgs []string
	for i, b := range batches {
		pkg := fmt.Sprintf("b%d", i)
		if generate(t, b, filepath.Join(run, pkg), pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	results := runCases(t, run, pkgs, batches)
	report(t, groups, results)
}

// batch puts the groups that are tried into directories in which no URI
// is declared twice (several groups of the suite reuse one $id). The
// regular-expression groups go into directories of their own, so that
// the count of generated types is the required tests' alone.
func batch(groups []*group) [][]*group {
	var required, regex []*group
	for _, g := range groups {
		if g.regex {
			regex = append(regex, g)
		} else {
			required = append(required, g)
		}
	}
	return append(batchOf(required), batchOf(regex)...)
}

func batchOf(groups []*group) [][]*group {
	var batches [][]*group
	var taken []map[string]bool
	for _, g := range groups {
		if g.leftOut != "" {
			continue
		}
		ids := g.ids()
		i := slices.IndexFunc(taken, func(m map[string]bool) bool {
			return !slices.ContainsFunc(ids, func(id string) bool { return m[id] })
		})
		if i < 0 {
			batches, taken = append(batches, nil), append(taken, map[string]bool{})
			i = len(batches) - 1
		}
		batches[i] = append(batches[i], g)
		for _, id := range ids {
			taken[i][id] = true
		}
	}
	return batches
}

func factKey(g *group) string  { return fmt.Sprintf("t.g%d", g.id) }
func factType(g *group) string { return fmt.Sprintf("TG%d", g.id) }

// files lays the groups out as a schema directory: the group's schema in
// a file of its own (its root stays the root, so its pointers and $id keep
// their meaning) and a fact that refers to it.
func files(groups []*group, pkg string) fstest.MapFS {
	fsys := fstest.MapFS{"warren.json": {Data: []byte(`{"package": "` + pkg + `"}`)}}
	for _, g := range groups {
		dir := fmt.Sprintf("%s/%s", g.draft, g.file)
		schema := g.Schema
		var obj map[string]any
		if json.Unmarshal(schema, &obj) == nil {
			if _, ok := obj["$schema"]; !ok {
				obj["$schema"] = draftURL(g.draft)
				schema, _ = json.Marshal(obj)
			}
		}
		fsys[fmt.Sprintf("%s/g%d.json", dir, g.id)] = &fstest.MapFile{Data: schema}
		fact := fmt.Sprintf(`{"x-routing-key": %q, "type": "object", "required": ["value"], "properties": {"value": {"$ref": "g%d.json"}}, "additionalProperties": false}`, factKey(g), g.id)
		fsys[fmt.Sprintf("%s/g%d.fact.json", dir, g.id)] = &fstest.MapFile{Data: []byte(fact)}
	}
	return fsys
}

func draftURL(dir string) string { return draftOfDir(dir).URL }

// draftOfDir returns the draft of a suite directory (ownRegexDraft's groups
// are 2020-12).
func draftOfDir(dir string) *load.Draft {
	if dir == ownRegexDraft {
		return load.Draft2020
	}
	for _, d := range drafts {
		if d.dir == dir {
			return d.draft
		}
	}
	panic(dir)
}

// generate writes the package of a batch into dir, leaving out each group
// whose files the generator refuses (with the reason it gave) until the
// rest generates. It reports whether anything is left to compile.
func generate(t *testing.T, groups []*group, dir, pkg string) bool {
	byFile := map[string]*group{}
	for _, g := range groups {
		byFile[fmt.Sprintf("%s/%s/g%d.json", g.draft, g.file, g.id)] = g
		byFile[fmt.Sprintf("%s/%s/g%d.fact.json", g.draft, g.file, g.id)] = g
	}
	live := slices.Clone(groups)
	for len(live) > 0 {
		out, err := generator.Generate(context.Background(), ".", generator.Options{FS: files(live, pkg)})
		var list load.ErrorList
		if err == nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, src := range out {
				if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
					t.Fatal(err)
				}
				if groups[0].regex {
					continue
				}
				// Every generated type but the inline structs and enums
				// that only their parents' codec reaches has a Validate.
				typesGenerated += bytes.Count(src, []byte("\n// Validate checks v against its schema"))
				typesReferenced += bytes.Count(src, []byte("\n// DecodeJSON reads v from d and checks it with the embedded schema"))
			}
			return true
		}
		if !errors.As(err, &list) {
			t.Fatal(err)
		}
		dropped := 0
		for _, e := range list {
			if g := byFile[e.File]; g != nil && g.leftOut == "" {
				g.leftOut = "not generated: " + e.Msg
				dropped++
			}
		}
		if dropped == 0 {
			t.Fatalf("generation fails without naming a group's file:\n%v", err)
		}
		live = slices.DeleteFunc(live, func(g *group) bool { return g.leftOut != "" })
	}
	return false
}

// typesGenerated counts the types generated for the suite,
// typesReferenced those of them that validate with the embedded schema
// because their generated code cannot check them exactly.
var typesGenerated, typesReferenced int

// verdict is what the program says of one case.
type verdict struct {
	Accepted     bool   `json:"accepted"`
	RoundTrip    bool   `json:"roundTrip"` // the re-encoded value is the same JSON
	Why          string `json:"why"`
	Reference    bool   `json:"reference"` // the embedded schema alone accepts it
	Generated    bool   `json:"generated"` // the generated decoding alone accepts it
	GeneratedWhy string `json:"generatedWhy"`
}

// runCases compiles one program over every generated package and runs
// every case of the generated groups through it.
func runCases(t *testing.T, run string, pkgs []string, batches [][]*group) map[*group][]verdict {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"os\"\n\n\t\"" + modulePath + "/internal/harness\"\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t%s %q\n", p, modulePath+"/"+filepath.ToSlash(run)+"/"+p)
	}
	b.WriteString(")\n\nfunc main() {\n\tos.Exit(harness.Main(map[string]harness.Check{\n")
	type input struct {
		Key  string          `json:"key"`
		Data json.RawMessage `json:"data"`
	}
	var inputs []input
	var order []*group
	for i, batch := range batches {
		pkg := fmt.Sprintf("b%d", i)
		if !slices.Contains(pkgs, pkg) {
			continue
		}
		for _, g := range batch {
			if g.leftOut != "" {
				continue
			}
			fmt.Fprintf(&b, "\t\t%q: harness.Of[%s.%s](%s.Fact%s),\n", factKey(g), pkg, factType(g), pkg, factType(g))
			for _, c := range g.Tests {
				inputs = append(inputs, input{factKey(g), c.Data})
			}
			order = append(order, g)
		}
	}
	b.WriteString("\t}))\n}\n")
	if err := os.WriteFile(filepath.Join(run, "main.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./"+filepath.ToSlash(run))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("compile and run the generated groups: %v\n%s", err, stderr.String())
	}
	var verdicts []verdict
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(inputs) {
		t.Fatalf("program output: %v (%d verdicts for %d cases)", err, len(verdicts), len(inputs))
	}
	results := map[*group][]verdict{}
	for _, g := range order {
		results[g], verdicts = verdicts[:len(g.Tests)], verdicts[len(g.Tests):]
	}
	return results
}
