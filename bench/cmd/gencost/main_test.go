package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCountLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package p\n\nvar A = 1\n")
	write("sub/b.go", "package p\nvar B = 2") // no final newline: wc -l counts 1
	write("c.json", "{}\n{}\n")               // not Go
	files, lines, err := countLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || lines != 4 {
		t.Errorf("countLines = %d files, %d lines; want 2, 4", files, lines)
	}
}

func TestAdaptAsyncAPI(t *testing.T) {
	doc := `{
  "asyncapi": "3.0.0",
  "channels": {"C": {"address": "a.b", "messages": {"M": {"$ref": "#/components/messages/M"}}}},
  "operations": {"send": {"action": "send", "channel": {"$ref": "#/channels/C"}, "messages": [{"$ref": "#/channels/C/messages/M"}]}},
  "components": {
    "messages": {"M": {
      "headers": {"type": "object", "properties": {"x-fact-version": {"type": "integer", "const": 1}}},
      "payload": {"type": "object", "additionalProperties": false, "properties": {"p": {"$ref": "#/components/schemas/S"}}}
    }},
    "schemas": {"S": {"type": "object", "properties": {
      "note": {"type": ["string", "null"], "maxLength": 100},
      "both": {"type": ["string", "integer"]},
      "open": {"type": "object", "additionalProperties": {"type": "string"}}
    }}}
  }
}`
	out, err := adaptAsyncAPI([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	at := func(path ...string) any {
		var cur any = v
		for _, p := range path {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[p]
			case []any:
				cur = c[0]
			}
		}
		return cur
	}
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"operations", "send", "messages", "0", "$ref"}, "#/components/messages/M"},
		{[]string{"components", "messages", "M", "headers", "properties", "x-fact-version", "type"}, "string"},
		{[]string{"components", "messages", "M", "headers", "properties", "x-fact-version", "const"}, "1"},
		{[]string{"components", "messages", "M", "payload", "additionalProperties"}, nil},
		{[]string{"components", "schemas", "S", "properties", "note", "type"}, "string"},
		{[]string{"components", "schemas", "S", "properties", "note", "maxLength"}, 100.0},
		{[]string{"components", "schemas", "S", "properties", "open", "additionalProperties", "type"}, "string"},
		{[]string{"channels", "C", "messages", "M", "$ref"}, "#/components/messages/M"},
	} {
		if got := at(c.path...); got != c.want {
			t.Errorf("%s = %#v, want %#v", strings.Join(c.path, "/"), got, c.want)
		}
	}
	if got := at("components", "schemas", "S", "properties", "both", "type"); len(got.([]any)) != 2 {
		t.Errorf("a type list without null changed: %#v", got)
	}

	bad := strings.Replace(doc, "#/channels/C/messages/M", "#/channels/C/messages/X", 1)
	if _, err := adaptAsyncAPI([]byte(bad)); err == nil {
		t.Error("a reference to a missing channel message was accepted")
	}
}

const rounds = `# gencost 2026-12-02 10:00 UTC
# versions warren=abc1234 asyncapi-codegen=v0.46.3 go-jsonschema=v0.24.1
# round 1 of 3 at 10:00:00 UTC, load 1.00 1.00 1.00
generate facts=100 side=warren round=1 wall=0.400 cpu=0.300 files=107 lines=40000
generate facts=100 side=asyncapi-codegen round=1 wall=0.800 cpu=0.600 files=1 lines=44900
generate facts=100 side=go-jsonschema round=1 wall=0.200 cpu=0.100 files=1 lines=12300
generate facts=100 side=floor round=1 wall=0.200 cpu=0.150 files=107 lines=40000
build facts=100 side=warren round=1 wall=4.000 cpu=6.000
build facts=100 side=asyncapi-codegen round=1 wall=2.000 cpu=3.000
# round 2 of 3 at 10:01:00 UTC, load 2.00 1.00 1.00
build facts=100 side=warren round=2 wall=6.000 cpu=6.000
build facts=100 side=asyncapi-codegen round=2 wall=2.000 cpu=3.000
# round 3 of 3 at 10:02:00 UTC, load 2.00 1.00 1.00
build facts=100 side=warren round=3 wall=5.000 cpu=6.000
build facts=100 side=asyncapi-codegen round=3 wall=4.000 cpu=3.000
# unmeasured build side=go-jsonschema: it failed
`

func TestTable(t *testing.T) {
	k, err := parseRounds(strings.NewReader(rounds))
	if err != nil {
		t.Fatal(err)
	}
	if len(k.records) != 10 || k.versions["asyncapi-codegen"] != "v0.46.3" || len(k.unmeasured) != 1 {
		t.Fatalf("parsed %d records, versions %v, unmeasured %q", len(k.records), k.versions, k.unmeasured)
	}
	var b strings.Builder
	writeTable(&b, k)
	out := b.String()
	for _, want := range []string{
		"| figure | rounds | warren abc1234 | asyncapi-codegen v0.46.3 | go-jsonschema v0.24.1 (types only) | floor (warren's files written, nothing computed) | warren / asyncapi-codegen | warren / go-jsonschema | warren / floor |",
		// Medians 5 and 2; the ratios per round are 2, 3 and 1.25.
		"| `go build` of the generated package, 100 facts: wall | 3 | 5.00 s (4.00–6.00 s) | 2.00 s (2.00–4.00 s) | — | — | 2.00 (1.25–3.00) | — | — |",
		"| generated lines per fact, 100 facts (all .go files) | 1 | 400 | 449 | 123 | 400 | 0.89 | 3.25 | 1.00 |",
		"| generated .go files, 100 facts | 1 | 107 | 1 | 1 | 107 | — | — | — |",
		"| generation, 100 facts, whole process: wall | 1 | 0.40 s | 0.80 s | 0.20 s | 0.20 s | 0.50 | 2.00 | 2.00 |",
		"Medians over the rounds",
		"Not measured: build side=go-jsonschema: it failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	if _, err := parseRounds(strings.NewReader("build facts=x side=warren round=1\n")); err == nil {
		t.Error("a bad number was accepted")
	}
}

func TestPool(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for path, src := range map[string]string{
		a: rounds,
		b: "# versions warren=abc1234 asyncapi-codegen=v0.46.3 go-jsonschema=v0.24.1\nbuild facts=100 side=warren round=1 wall=1 cpu=1\n",
		c: "# versions warren=def5678 asyncapi-codegen=v0.46.3 go-jsonschema=v0.24.1\n",
	} {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, err := pool(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if last := k.records[len(k.records)-1]; len(k.records) != 11 || last.round != 4 {
		t.Errorf("pooled %d records, the last of round %d; want 11, 4", len(k.records), last.round)
	}
	if _, err := pool(a, c); err == nil {
		t.Error("rounds of other versions were pooled")
	}
}

func TestHelpers(t *testing.T) {
	if got := strings.Join(rotate(sides, 5), ","); got != "asyncapi-codegen,go-jsonschema,floor,warren" {
		t.Errorf("rotate = %s", got)
	}
	for n, want := range map[int]string{7: "7", 100: "100", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %s, want %s", n, got, want)
		}
	}
	if got, err := counts("100, 1000,"); err != nil || len(got) != 2 || got[1] != 1000 {
		t.Errorf("counts = %v, %v", got, err)
	}
	if _, err := counts("0"); err == nil {
		t.Error("counts accepted 0")
	}
}

// The floor reads the schemas and writes files of the listed names, sizes
// and line counts, below directories it makes.
func TestFloorWritesTheListedFiles(t *testing.T) {
	dir := t.TempDir()
	schemas, out := filepath.Join(dir, "schemas"), filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(schemas, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schemas, "a", "x.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "floor.list")
	if err := os.WriteFile(list, []byte("3 120 a.go\n0 5 kit/b.go\n1 1 c.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := runFloor(list, schemas, out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name        string
		lines, size int
	}{{"a.go", 3, 120}, {"kit/b.go", 0, 5}, {"c.go", 1, 1}} {
		b, err := os.ReadFile(filepath.Join(out, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != f.size || bytes.Count(b, []byte{'\n'}) != f.lines {
			t.Errorf("%s: %d bytes, %d lines; want %d, %d", f.name, len(b), bytes.Count(b, []byte{'\n'}), f.size, f.lines)
		}
	}
	if err := os.WriteFile(list, []byte("3 2 a.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runFloor(list, schemas, out); err == nil || !strings.Contains(err.Error(), "is not") {
		t.Errorf("a file of more lines than bytes: %v", err)
	}
}
