package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite cmd/warren/testdata/docs/*.md from the current warren docs")

// The catalogue of the example schemas, and of the streams golden case,
// byte for byte. After a deliberate change, regenerate them with `go test
// ./cmd/warren -run TestDocsGolden -update` and read the diff.
func TestDocsGolden(t *testing.T) {
	for _, tc := range []struct{ golden, dir string }{
		{"catalogue.md", filepath.Join("..", "..", "examples", "catalogue", "events")},
		{"streams.md", filepath.Join("..", "..", "golden", "streams", "events")},
	} {
		t.Run(tc.golden, func(t *testing.T) { docsGolden(t, filepath.Join("testdata", "docs", tc.golden), tc.dir) })
	}
}

func docsGolden(t *testing.T, golden, dir string) {
	code, got, stderr := run(t, "docs", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("warren docs (-want +got):\n%s", diff)
	}
	checkTables(t, got)

	out := filepath.Join(t.TempDir(), "events.md")
	if code, stdout, _ := run(t, "docs", "--out", out, dir); code != 0 || stdout != "" {
		t.Fatalf("--out: exit %d, stdout %q", code, stdout)
	}
	if written, _ := os.ReadFile(out); string(written) != got {
		t.Error("--out wrote something else than standard output")
	}
}

// unescapedPipe matches a '|' that is not escaped with a backslash.
var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

// checkTables fails the test unless every row of every Markdown table in
// page has as many cells as its header: nothing from a schema split a cell
// or ended a row early.
func checkTables(t *testing.T, page string) {
	t.Helper()
	cells := func(line string) int {
		// Count twice over overlapping matches: "||" is two pipes.
		return len(unescapedPipe.FindAllStringIndex(strings.ReplaceAll(line, "||", "| |"), -1))
	}
	header := 0
	for i, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		if header == 0 {
			header = cells(line)
			continue
		}
		if n := cells(line); n != header {
			t.Errorf("line %d has %d cell separators, its table's header %d:\n%s", i+1, n, header, line)
		}
	}
}

// Schema text that would break the page if pasted as is: pipes and line
// breaks in table cells, HTML, a heading and a code fence in a description,
// quotes and '#' in Mermaid labels, a backtick in a code span.
var nastySchemas = map[string]string{
	"warren.json": `{
  "description": "Line one\n# not a heading\n` + "```" + `\n<script>alert(1)</script>\n---",
  "consumers": {
    "svc": {"bindings": ["order.#"], "description": "Reads | all <b>orders</b>", "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{
  "x-routing-key": "order.placed",
  "description": "Placed.\n\nSecond paragraph with a | pipe.",
  "deprecated": true,
  "type": "object",
  "properties": {
    "a|b": {"type": "string", "description": "first | line\nsecond line <i>", "pattern": "^(x|p.q)$", "default": "p|q"},
    "tick": {"type": "string", "enum": ["a` + "`" + `b", "c|d"]}
  }
}`,
}

func TestDocsEscapesSchemaText(t *testing.T) {
	dir := schemaDir(t, nastySchemas)
	code, page, stderr := run(t, "docs", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	checkTables(t, page)
	for _, want := range []string{
		// No Go package in the manifest: the title does without.
		"# event catalogue\n",
		"Line one\n\\# not a heading\n\\```\n&lt;script&gt;alert(1)&lt;/script&gt;\n\\---\n",
		"### `order.placed`\n\n**Deprecated.**\n\nPlaced.\n\nSecond paragraph with a | pipe.\n",
		"| `a\\|b` | `*string` | no | pattern `^(x\\|p.q)$`, default `\"p\\|q\"` | first \\| line<br>second line &lt;i&gt; |\n",
		"| `` \"a`b\" `` | `OrderPlacedTickAB` |\n",
		"| `\"c\\|d\"` | `OrderPlacedTickCD` |\n",
		"Reads | all &lt;b&gt;orders&lt;/b&gt;\n",
		`  events -->|"order.#35;"| q0` + "\n",
		"[`order.placed`](#fact-order.placed) (deprecated) |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<i>") {
		t.Error("schema HTML reached the page unescaped")
	}
}

func TestDocsUsage(t *testing.T) {
	code, stdout, _ := run(t, "docs", "--help")
	if code != 0 || !strings.Contains(stdout, "warren docs ./events > docs/events.md") {
		t.Errorf("docs --help: exit %d, no example in:\n%s", code, stdout)
	}
	dir := schemaDir(t, map[string]string{"warren.json": `{"package": 3}`})
	if code, stdout, stderr := run(t, "docs", dir); code != 1 || stdout != "" || !strings.Contains(stderr, dir+"/warren.json:1:") {
		t.Errorf("invalid directory: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestDocsCheck(t *testing.T) {
	in := schemaDir(t, validSchemas)
	page := filepath.Join(t.TempDir(), "events.md")
	fix := "run warren docs --out " + page + " " + in + "\n"

	code, _, stderr := run(t, "docs", "--check", "--out", page, in)
	if code != 1 || stderr != page+": missing; "+fix {
		t.Errorf("no page yet: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(page); err == nil {
		t.Fatal("--check wrote the page")
	}
	if code, _, stderr := run(t, "docs", "--out", page, in); code != 0 {
		t.Fatalf("docs --out: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := run(t, "docs", "--check", "--out", page, in); code != 0 || stdout != "" || stderr != "" {
		t.Errorf("fresh page: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A schema changes: the page is stale and stays as it was.
	before, _ := os.ReadFile(page)
	if err := os.WriteFile(filepath.Join(in, "order/paid.json"), []byte(`{"x-routing-key": "order.paid", "type": "object", "description": "Paid in full."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "docs", "--check", "--out", page, in)
	if code != 1 || stderr != page+": stale, differs from what would be generated; "+fix {
		t.Errorf("changed schema: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(page); !bytes.Equal(before, after) {
		t.Error("--check changed the page")
	}
	// Without a file there is nothing to compare with.
	if code, _, stderr := run(t, "docs", "--check", in); code != 2 || !strings.Contains(stderr, "expected --out FILE\nusage: warren docs") {
		t.Errorf("--check without --out: exit %d, stderr %q", code, stderr)
	}
}
