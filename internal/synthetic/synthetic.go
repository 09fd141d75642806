// Package synthetic writes the schema directory that the generator's
// benchmarks and scripts/gencost measure: n facts that look like real ones,
// spread over 10 domains with one consumer each, all referring to one
// shared definition. It is the one place that says what the synthetic
// input is, so that the Go benchmark (generator/bench_test.go) and the
// comparison with other generators (bench/cmd/gencost) measure the same
// thing.
package synthetic

import (
	"fmt"
	"os"
	"path/filepath"
)

// Domains is how many domains (and consumers) the facts are spread over.
const Domains = 10

// Write writes a schema directory of n facts into dir, which must exist:
// warren.json (package "synthetic", consumer-D bound to domainD.#),
// common/money.json (the shared Money object) and, for each i < n,
// domain{i%10}/thing{i}-happened.json, a fact with scalars (a uuid, a
// date-time), a nullable optional string with a maxLength, a $ref to Money,
// an enum, a nested object and an array of objects with a default.
func Write(dir string, n int) error {
	manifest := `{"package": "synthetic", "consumers": {`
	for d := range Domains {
		if d > 0 {
			manifest += ","
		}
		manifest += fmt.Sprintf(`"consumer-%d": {"bindings": ["domain%d.#"]}`, d, d)
	}
	manifest += "}}"
	if err := os.WriteFile(filepath.Join(dir, "warren.json"), []byte(manifest), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "common"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "common", "money.json"), []byte(Money), 0o644); err != nil {
		return err
	}
	for i := range n {
		if err := os.MkdirAll(filepath.Join(dir, Domain(i)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, FactPath(i)), []byte(Fact(i)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Money is common/money.json.
const Money = `{"title": "Money", "type": "object", "required": ["amount", "currency"],
  "properties": {"amount": {"type": "integer"}, "currency": {"type": "string", "enum": ["EUR", "USD"]}}}`

// Domain is the domain of fact i: its folder and its routing key's first word.
func Domain(i int) string { return fmt.Sprintf("domain%d", i%Domains) }

// FactPath is where Write puts fact i, relative to the directory.
func FactPath(i int) string {
	return filepath.Join(Domain(i), fmt.Sprintf("thing%d-happened.json", i))
}

// Fact is the schema file of fact i.
func Fact(i int) string {
	return fmt.Sprintf(`{
  "x-routing-key": "%s.thing%d.happened",
  "description": "Synthetic fact %d.",
  "type": "object",
  "required": ["id", "at", "amount", "status"],
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "at": {"type": "string", "format": "date-time"},
    "note": {"type": ["string", "null"], "maxLength": 100},
    "amount": {"$ref": "../common/money.json"},
    "status": {"type": "string", "enum": ["new", "done", "failed"]},
    "counts": {"type": "object", "properties": {"ok": {"type": "integer"}, "failed": {"type": "integer"}}},
    "lines": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "default": 1}}}}
  }
}`, Domain(i), i, i)
}
