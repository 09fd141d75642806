package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openAPIComponents is a schema directory whose facts' schemas sit in a
// vendored OpenAPI document under #/components/schemas (the manifest
// points at PaymentCaptured; a team's fact refers to Money from its own
// file), where no JSON Schema keyword holds them.
const openAPIComponents = "../../generator/testdata/openapi-components/events"

// readTree returns the files below dir by slash-separated path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(src)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSchemasInsideADocument: generate types every schema the facts reach
// inside the OpenAPI document; a $ref there that points at nothing, and a
// keyword the file's draft refuses there (OpenAPI 3.0's boolean
// exclusiveMinimum, in a file that names no $schema and so is read as
// 2020-12), fail generate and check alike, at file, line:col and pointer,
// writing nothing.
func TestSchemasInsideADocument(t *testing.T) {
	files := readTree(t, openAPIComponents)
	in := schemaDir(t, files)
	out := filepath.Join(t.TempDir(), "openapicomponents")
	if code, _, stderr := run(t, "generate", "--out", out, in); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	src, err := os.ReadFile(filepath.Join(out, "vendor_openapi.json.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "json.RawMessage `json:\"money\"`") || !strings.Contains(string(src), "type OpenapiComponentsSchemasCurrency string") {
		t.Errorf("vendor_openapi.json.go does not type Money and Currency:\n%s", src)
	}
	if code, _, stderr := run(t, "check", in); code != 0 {
		t.Errorf("check: exit %d: %s", code, stderr)
	}

	vendored := files["vendor/openapi.json"]
	for from, to := range map[string]string{
		`"3.1.0"`: `"3.0.3"`,
		`"amount": {"type": "integer", "exclusiveMinimum": 0}`:  `"amount": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}`,
		`"payer": {"$ref": "../common/party.json"}`:             `"payer": {"$ref": "#/components/schemas/Nope"}`,
		`"currency": {"$ref": "#/components/schemas/Currency"}`: `"currency": {"$ref": "#/components/schemas/Curency"}`,
	} {
		if !strings.Contains(vendored, from) {
			t.Fatalf("vendor/openapi.json lacks %s", from)
		}
		vendored = strings.Replace(vendored, from, to, 1)
	}
	files["vendor/openapi.json"] = vendored
	in = schemaDir(t, files)
	file := filepath.Join(in, "vendor", "openapi.json")
	want := []string{
		file + `:13:29: /components/schemas/PaymentCaptured/properties/payer/$ref: $ref "#/components/schemas/Nope": vendor/openapi.json has nothing at /components/schemas/Nope`,
		file + `:20:75: /components/schemas/Money/properties/amount/exclusiveMinimum: expected number, got true (in 2020-12, exclusiveMinimum is the number itself (the exclusive bound); true/false was draft-04)`,
		file + `:21:32: /components/schemas/Money/properties/currency/$ref: $ref "#/components/schemas/Curency": vendor/openapi.json has nothing at /components/schemas/Curency`,
	}

	out = filepath.Join(t.TempDir(), "openapicomponents")
	code, stdout, stderr := run(t, "generate", "--out", out, in)
	if code != 1 || stdout != "" {
		t.Errorf("generate: exit %d, stdout %q; want exit 1 and nothing on stdout", code, stdout)
	}
	if got := strings.TrimSpace(stderr); got != strings.Join(want, "\n") {
		t.Errorf("generate: stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if entries := listDir(t, filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("generate wrote %v", entries)
	}
	code, _, stderr = run(t, "check", in)
	if code != 1 {
		t.Errorf("check: exit %d, want 1", code)
	}
	for _, line := range want {
		if !strings.Contains(stderr, line) {
			t.Errorf("check: stderr lacks\n%s\nstderr:\n%s", line, stderr)
		}
	}
}
