package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAsyncAPICommand(t *testing.T) {
	in := schemaDir(t, validSchemas)
	code, stdout, stderr := run(t, "asyncapi", "--info-version", "2.1.0", in)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var doc struct {
		AsyncAPI string
		Info     struct{ Title, Version string }
		Channels map[string]struct{ Address string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if doc.AsyncAPI != "3.0.0" || doc.Info.Title != "events" || doc.Info.Version != "2.1.0" ||
		doc.Channels["OrderPlaced"].Address != "order.placed" || doc.Channels["OrderPaid"].Address != "order.paid" {
		t.Errorf("document: %+v", doc)
	}

	// --out writes the same document; --check compares with it.
	out := filepath.Join(t.TempDir(), "asyncapi.json")
	if code, _, stderr := run(t, "asyncapi", "--check", "--out", out, in); code != 1 || stderr != out+": missing; run warren asyncapi --out "+out+" "+in+"\n" {
		t.Errorf("--check before writing: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, "asyncapi", "--out", out, "--info-version", "2.1.0", in); code != 0 {
		t.Fatalf("--out: exit %d, stderr %q", code, stderr)
	}
	if written, _ := os.ReadFile(out); string(written) != stdout {
		t.Error("--out wrote another document than standard output shows")
	}
	if code, _, stderr := run(t, "asyncapi", "--check", "--out", out, "--info-version", "2.1.0", in); code != 0 || stderr != "" {
		t.Errorf("--check when fresh: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, "asyncapi", "--check", "--out", out, in); code != 1 || !strings.Contains(stderr, ": stale, differs") {
		t.Errorf("--check with another version: exit %d, stderr %q", code, stderr)
	}

	// Invalid input is reported as generate reports it, and nothing is written.
	bad := schemaDir(t, map[string]string{"warren.json": `{"package": "events", "consumers": {"m": {"bindings": ["ordr.placed"]}}}`, "order/placed.json": validSchemas["order/placed.json"]})
	code, stdout, stderr = run(t, "asyncapi", bad)
	if code != 1 || stdout != "" || !strings.Contains(stderr, filepath.Join(bad, "warren.json")+":1:") || !strings.Contains(stderr, `did you mean "order.placed"?`) {
		t.Errorf("invalid directory: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run(t, "asyncapi"); code != 2 || !strings.Contains(stderr, "usage: warren asyncapi") {
		t.Errorf("no directory: exit %d, stderr %q", code, stderr)
	}
}
