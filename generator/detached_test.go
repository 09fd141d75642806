package generator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator"
)

// detachedCase is a schema directory whose facts live in a vendored
// OpenAPI document: the manifest points at
// #/components/schemas/PaymentCaptured, whose money refers to Money, whose
// currency refers to the enum Currency, all under components, which no
// JSON Schema keyword holds; a team's own fact refers to Money from
// another file.
const detachedCase = "testdata/openapi-components"

// TestSchemasInsideADocumentAreTyped: every schema such a fact reaches is
// a Go type, not json.RawMessage: the generated code checks what the
// embedded schema checks.
func TestSchemasInsideADocumentAreTyped(t *testing.T) {
	files, err := generator.Generate(context.Background(), filepath.Join(detachedCase, "events"), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for file, fields := range map[string][]string{
		"vendor_openapi.json.go": {
			"Money OpenapiComponentsSchemasMoney `json:\"money\"`",
			"Payer \\*Party `json:\"payer,omitzero\"`",
			"Currency OpenapiComponentsSchemasCurrency `json:\"currency\"`",
		},
		"team_refund.json.go": {"Amount OpenapiComponentsSchemasMoney `json:\"amount\"`"},
	} {
		src := string(files[file])
		for _, field := range fields {
			// gofmt aligns the columns of a struct.
			if !regexp.MustCompile(`(?m)^\t` + strings.ReplaceAll(field, " ", " +") + `$`).MatchString(src) {
				t.Errorf("%s lacks the field %s:\n%s", file, field, src)
			}
		}
	}
	if vendor := string(files["vendor_openapi.json.go"]); !strings.Contains(vendor, "type OpenapiComponentsSchemasCurrency string") {
		t.Errorf("vendor_openapi.json.go: Currency is no enum type:\n%s", vendor)
	}
	if schemas := string(files["schemas.go"]); !strings.Contains(schemas, `"common/party.json":`) {
		t.Errorf("schemas.go does not embed common/party.json, which PaymentCaptured refers to:\n%s", schemas)
	}
}

// TestSchemasInsideADocumentAgree compiles the generated package and runs
// payloads through both of a consumer's checks: the generated decoding
// (and the decoded value's Validate) and the embedded schema. They must
// agree, on Money's type and on Currency's enum, reached from the
// manifest's pointer and from the team's $ref alike.
func TestSchemasInsideADocumentAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs the generated package")
	}
	files, err := generator.Generate(context.Background(), filepath.Join(detachedCase, "events"), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A fixed directory inside the module, so that the build cache keeps
	// what did not change since the last run.
	run := filepath.Join(detachedCase, "run")
	if err := os.RemoveAll(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	pkg := filepath.Join(run, "openapicomponents")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(run, "main.go"), []byte(agreeMain), 0o644); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		fact, payload string
		valid         bool
	}{
		{"captured", `{"id": "p1", "money": {"amount": 5, "currency": "EUR"}, "payer": {"name": "Ann"}}`, true},
		{"captured", `{"id": "p1", "money": 1}`, false},
		{"captured", `{"id": "p1", "money": {"amount": 5, "currency": "GBP"}}`, false},
		{"captured", `{"id": "p1", "money": {"amount": 0, "currency": "EUR"}}`, false},
		{"captured", `{"id": "p1", "money": {"amount": 5}}`, false},
		{"captured", `{"id": "p1", "money": {"amount": 5, "currency": "USD"}, "payer": {"name": ""}}`, false},
		{"refunded", `{"payment_id": "p1", "amount": {"amount": 5, "currency": "USD"}}`, true},
		{"refunded", `{"payment_id": "p1", "amount": {"amount": 5, "currency": "GBP"}}`, false},
		{"refunded", `{"payment_id": "p1", "amount": "5 EUR"}`, false},
	}
	var in bytes.Buffer
	for _, c := range cases {
		in.WriteString(c.fact + " " + strings.Join(strings.Fields(c.payload), "") + "\n")
	}
	cmd := exec.Command("go", "run", "./"+filepath.ToSlash(run))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("compile and run the generated package: %v\n%s", err, stderr.String())
	}
	type verdict struct{ Generated, Validate, Reference string }
	var verdicts []verdict
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(cases) {
		t.Fatalf("program output %s: %v (%d verdicts for %d cases)", out, err, len(verdicts), len(cases))
	}
	for i, c := range cases {
		v := verdicts[i]
		if c.valid && (v.Generated != "" || v.Validate != "" || v.Reference != "") {
			t.Errorf("%s %s: refused: %+v", c.fact, c.payload, v)
		}
		if !c.valid && (v.Generated == "" || v.Reference == "") {
			t.Errorf("%s %s: accepted: generated decoding says %q, embedded schema %q; want both to refuse it", c.fact, c.payload, v.Generated, v.Reference)
		}
	}
}

// agreeMain reads "<fact> <payload>" lines and prints, for each, what the
// generated decoding, the decoded value's Validate and the embedded
// schema say of it ("" for accepted).
const agreeMain = `package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"

	"github.com/warrenbus/warren/generator/testdata/openapi-components/run/openapicomponents"
	"github.com/warrenbus/warren/runtime"
)

type verdict struct{ Generated, Validate, Reference string }

func text(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func check[T any, P interface {
	*T
	Validate() error
}](f runtime.Fact, payload []byte) verdict {
	var v verdict
	var value T
	if err := json.Unmarshal(payload, &value); err != nil {
		v.Generated = text(err)
	} else {
		v.Validate = text(P(&value).Validate())
	}
	v.Reference = text(f.Validate(payload))
	return v
}

func main() {
	var out []verdict
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fact, payload, _ := strings.Cut(lines.Text(), " ")
		switch fact {
		case "captured":
			out = append(out, check[openapicomponents.PaymentCaptured](openapicomponents.FactPaymentCaptured, []byte(payload)))
		case "refunded":
			out = append(out, check[openapicomponents.PaymentRefunded](openapicomponents.FactPaymentRefunded, []byte(payload)))
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`
