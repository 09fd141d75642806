package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// lintCase is a directory of generator/lint/testdata.
func lintCase(name string) string {
	return filepath.Join("..", "..", "generator", "lint", "testdata", name)
}

func TestCheckClean(t *testing.T) {
	code, stdout, stderr := run(t, "check", lintCase("clean"))
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("check clean: exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
}

// The reference example is what teams copy: it must pass the strictest
// check without a single finding, info included.
func TestCheckExampleHasNoFindings(t *testing.T) {
	code, stdout, stderr := run(t, "check", "--strict", filepath.Join("..", "..", "examples", "catalogue", "events"))
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("check --strict examples/catalogue/events: exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
}

func TestCheckWarningsFailOnlyWhenStrict(t *testing.T) {
	dir := lintCase("past-tense")
	want := dir + `/order/cancel.json:2:20: past-tense: routing key "order.cancel" ends in the verb "cancel", which asks for something to be done; a fact states what happened, e.g. "order.cancelled" (warning)
` + dir + `/order/rebuild-index.json:2:20: past-tense: routing key "order.rebuild-index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "order.index-rebuilt" (warning)
` + dir + `: 0 errors, 2 warnings, 0 info
`
	code, stdout, stderr := run(t, "check", dir)
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("check: exit %d, stderr %q, stdout:\n%s\nwant exit 0, stdout:\n%s", code, stderr, stdout, want)
	}
	code, stdout, stderr = run(t, "check", "--strict", dir)
	if code != 1 || stdout != want || stderr != "warren check: warnings fail with --strict\n" {
		t.Errorf("check --strict: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

func TestCheckInfoNeverFails(t *testing.T) {
	code, stdout, _ := run(t, "check", "--strict", lintCase("fact-unconsumed"))
	if code != 0 || !strings.Contains(stdout, ": fact-unconsumed: ") || !strings.HasSuffix(stdout, ": 0 errors, 0 warnings, 1 info\n") {
		t.Errorf("check --strict with an info finding: exit %d, stdout:\n%s", code, stdout)
	}
}

// A binding that matches nothing fails the model as well as the lint; the
// user sees it once, with its rule name.
func TestCheckBindingReportedOnce(t *testing.T) {
	dir := lintCase("binding-matches-nothing")
	code, stdout, stderr := run(t, "check", dir)
	want := dir + `/warren.json:7:9: binding-matches-nothing: binding "order.plcaed" of consumer "ledger" matches no fact; did you mean "order.placed"? (error)
` + dir + `: 1 error, 0 warnings, 0 info
`
	if code != 1 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 1, stdout:\n%s", code, stderr, stdout, want)
	}
}

func TestCheckValidatesAsGenerateDoes(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		stderr string // a line that must be on stderr
	}{
		{"loader", map[string]string{
			"warren.json":       `{"package": "events"}`,
			"order/placed.json": `{"x-routing-key": "order.placed", "type": "strin"}`,
		}, `/order/placed.json:1:43: /type: expected one of "array", "boolean", "integer", "null", "number", "object", "string"; got "strin"`},
		{"model", map[string]string{
			"warren.json":       `{"consumers": {"mailer": {"bindings": ["order.placed"]}}}`,
			"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "additionalProperties": false}`,
		}, `/warren.json:1:1: no Go package name: set "package" in warren.json or pass --package`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := schemaDir(t, tt.files)
			code, _, stderr := run(t, "check", dir)
			if code != 1 || !strings.Contains(stderr, dir+tt.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and a line containing %q", code, stderr, dir+tt.stderr)
			}
		})
	}
}

// The summary line counts the validation errors whichever step found them:
// the loader (a retention of 0s, a start that is no start) as well as the
// model (a retention of no whole seconds).
func TestCheckSummaryWhicheverStepFails(t *testing.T) {
	for _, tc := range []struct{ name, stream, start string }{
		{"loader maxAge", `"maxAge": "0s"`, `"first"`},
		{"loader start", `"maxAge": "168h"`, `"yesterday"`},
		{"model maxAge", `"maxAge": "1500ms"`, `"first"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := schemaDir(t, map[string]string{
				"warren.json": `{"package": "events", "streams": {"audit": {"bindings": ["order.#"], ` + tc.stream + `}},
  "consumers": {"auditor": {"stream": "audit", "bindings": ["order.placed"], "start": ` + tc.start + `}}}`,
				"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "additionalProperties": false}`,
			})
			code, stdout, stderr := run(t, "check", dir)
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stdout, dir+": 1 validation error") {
				t.Errorf("exit %d, stderr:\n%sstdout:\n%swant exit 1, one error and a summary line counting it", code, stderr, stdout)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	code, stdout, stderr := run(t, "check", "--format", "json", lintCase("required-not-in-properties"))
	if code != 1 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 1 and nothing on stderr", code, stderr)
	}
	var got checkJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	if !got.Valid || len(got.Errors) != 0 || len(got.Findings) != 3 {
		t.Fatalf("got %+v; want valid with 3 findings", got)
	}
	f := got.Findings[0]
	if f.Rule != "required-not-in-properties" || f.Severity != "error" || f.File != filepath.Join(lintCase("required-not-in-properties"), "order", "placed.json") || f.Line != 8 || f.Col != 5 || f.Pointer != "/required/1" {
		t.Errorf("first finding = %+v", f)
	}

	// An invalid directory is still a JSON answer on stdout.
	dir := schemaDir(t, map[string]string{"warren.json": `{"package": 1}`})
	code, stdout, _ = run(t, "check", "--format", "json", dir)
	got = checkJSON{}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 1 || got.Valid || len(got.Errors) == 0 || got.Errors[0].File != filepath.Join(dir, "warren.json") {
		t.Errorf("invalid directory: exit %d, err %v, got %+v", code, err, got)
	}
}

func TestCheckUsage(t *testing.T) {
	code, stdout, _ := run(t, "check", "--help")
	for _, want := range []string{"warren check ./events", `"x-warren-lint": {"disable": ["past-tense", "fact-unconsumed"]}`, "past-tense", "required-not-in-properties"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("check --help: exit %d, missing %q in:\n%s", code, want, stdout)
		}
	}
	tests := [][]string{
		{"check"},
		{"check", "a", "b"},
		{"check", "--format", "xml", lintCase("clean")},
	}
	for _, args := range tests {
		if code, _, stderr := run(t, args...); code != 2 || !strings.HasPrefix(stderr, "warren check: ") || !strings.Contains(stderr, "\nusage: warren check [--strict]") {
			t.Errorf("%q: exit %d, stderr %q; want 2, a message and the usage line", args, code, stderr)
		}
	}
}

// Text and JSON name every file and position the same way, so a tool and a
// person reading the two reports point at the same place.
func TestCheckFormatsNameFilesAlike(t *testing.T) {
	for _, dir := range []string{
		lintCase("required-not-in-properties"),
		schemaDir(t, map[string]string{"warren.json": `{"package": 1}`}),
	} {
		_, text, textErr := run(t, "check", dir)
		_, out, _ := run(t, "check", "--format", "json", dir)
		var got checkJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var places []string
		for _, e := range got.Errors {
			places = append(places, fmt.Sprintf("%s:%d:%d: ", e.File, e.Line, e.Col))
		}
		for _, f := range got.Findings {
			places = append(places, fmt.Sprintf("%s:%d:%d: %s: ", f.File, f.Line, f.Col, f.Rule))
		}
		if len(places) == 0 {
			t.Fatalf("%s: nothing reported", dir)
		}
		for _, p := range places {
			if !strings.Contains(textErr+text, "\n"+p) && !strings.HasPrefix(textErr+text, p) {
				t.Errorf("%s: the JSON names %q, the text report does not:\n%s%s", dir, p, textErr, text)
			}
		}
	}
}

// A consumer pinned to a version of which no version it reads is published
// poisons every such fact: check warns at its pin, naming the consumer,
// the fact, the pin and what is published (golden/versions keeps one on
// purpose, so it is a warning, failing only --strict). A consumer pinned
// to a published version gets no finding.
func TestCheckPinnedVersionUnpublished(t *testing.T) {
	dir := filepath.Join("..", "..", "golden", "versions", "events")
	want := dir + `/warren.json:11:37: pinned-version-unpublished: consumer "legacy-mailer" is pinned to version 1 of order.placed, but the publisher publishes versions 2, 3 (warren.json "versions"): it reads version 1 and no newer one, so it judges every order.placed by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2 or 3; without a pin it reads the newest) and deploy it, or publish version 1 too ("versions": {"order.placed": {"publish": [1, 2, 3]}}) while it is pinned (warning)
`
	code, stdout, stderr := run(t, "check", dir)
	if code != 0 || !strings.Contains(stdout, want) || !strings.HasSuffix(stdout, ": 0 errors, 1 warning, 6 info\n") || stderr != "" {
		t.Errorf("check: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the line:\n%s", code, stderr, stdout, want)
	}
	if code, _, _ := run(t, "check", "--strict", dir); code != 1 {
		t.Errorf("check --strict: exit %d, want 1", code)
	}

	pinnedToPublished := schemaDir(t, map[string]string{
		"warren.json": `{"package": "events", "versions": {"order.placed": {"publish": [1, 2]}},
  "consumers": {"mailer": {"bindings": ["order.placed"], "versions": {"order.placed": 1}}}}`,
		"order/placed.v1.json": `{"x-routing-key": "order.placed", "x-version": 1, "type": "object", "additionalProperties": false}`,
		"order/placed.v2.json": `{"x-routing-key": "order.placed", "x-version": 2, "type": "object", "additionalProperties": false}`,
	})
	if code, stdout, stderr := run(t, "check", "--strict", pinnedToPublished); code != 0 || stdout != "" || stderr != "" {
		t.Errorf("check --strict of a consumer pinned to a published version: exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
}
