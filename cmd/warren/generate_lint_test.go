package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generate refuses a directory with an error finding of the lint rules
// (a saga that never starts, a fact of "startsWith" told not to start
// one), as check does, before writing anything: the findings on stderr
// exactly as check prints them, then a line saying nothing was written,
// exit 1; --check as well. Nothing is written into a new directory nor
// changed in an existing one.
func TestGenerateRefusesLintErrors(t *testing.T) {
	for _, rule := range []string{"saga-never-starts", "saga-start-overridden", "saga-state-not-object", "required-not-in-properties", "lint-keyword"} {
		t.Run(rule, func(t *testing.T) {
			dir := lintCase(rule)
			code, stdout, _ := run(t, "check", dir)
			if code != 1 {
				t.Fatalf("check: exit %d, want 1", code)
			}
			var findings []string
			for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
				if strings.HasSuffix(line, " (error)") {
					findings = append(findings, line)
				}
			}
			if len(findings) == 0 {
				t.Fatalf("check found no error in %s:\n%s", dir, stdout)
			}
			want := strings.Join(findings, "\n") + "\nwarren generate: " + dir + ": " + count(len(findings), "lint error") +
				"; nothing was written (warren check " + dir + " lists every finding)\n"

			fresh := filepath.Join(t.TempDir(), "events")
			code, stdout, stderr := run(t, "generate", "--out", fresh, dir)
			if code != 1 || stdout != "" || stderr != want {
				t.Errorf("generate into a new directory: exit %d, stdout %q, stderr:\n%s\nwant exit 1, stderr:\n%s", code, stdout, stderr, want)
			}
			if _, err := os.Stat(fresh); !os.IsNotExist(err) {
				t.Errorf("generate refused, yet %s exists (%v)", fresh, err)
			}

			existing := t.TempDir()
			if code, _, stderr := run(t, "generate", "--out", existing, schemaDir(t, validSchemas)); code != 0 {
				t.Fatalf("generate a valid directory: exit %d: %s", code, stderr)
			}
			before := snapshot(t, existing)
			for _, args := range [][]string{{"generate", "--out", existing, dir}, {"generate", "--check", "--out", existing, dir}} {
				code, stdout, stderr := run(t, args...)
				if code != 1 || stdout != "" || stderr != want {
					t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 1, stderr:\n%s", args, code, stdout, stderr, want)
				}
			}
			if !maps.Equal(before, snapshot(t, existing)) {
				t.Error("a refused run changed the output directory")
			}
		})
	}
}

// Warnings and info findings do not fail generate, nor does it print
// them (check does); a file that turns an error rule off for itself
// (x-warren-lint) generates.
func TestGenerateIgnoresWarningsAndDisabledRules(t *testing.T) {
	for _, dir := range []string{lintCase("past-tense"), lintCase("fact-unconsumed"), lintCase("saga-correlation-unmatched"), lintCase("disabled")} {
		out := filepath.Join(t.TempDir(), "events")
		code, stdout, stderr := run(t, "generate", "--out", out, dir)
		if code != 0 || stdout != "" || stderr != "" {
			t.Errorf("generate %s: exit %d, stdout %q, stderr %q; want 0 and nothing printed", dir, code, stdout, stderr)
		}
	}
	dir := schemaDir(t, map[string]string{
		"warren.json": `{"package": "events", "consumers": {"mailer": {"bindings": ["order.*"]}}}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "x-warren-lint": {"disable": ["required-not-in-properties"]},
  "type": "object", "required": ["id", "channel"], "properties": {"id": {"type": "string"}}}`,
	})
	if code, _, _ := run(t, "check", dir); code != 0 {
		t.Fatalf("check with the rule turned off: exit %d, want 0", code)
	}
	if code, stdout, stderr := run(t, "generate", "--out", filepath.Join(t.TempDir(), "events"), dir); code != 0 || stdout != "" || stderr != "" {
		t.Errorf("generate with the rule turned off: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
