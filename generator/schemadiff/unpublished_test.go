package schemadiff

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVersionUnpublished checks what version-unpublished says: the
// version no longer published, the consumers of the old directory pinned
// to it, what keeps them reading, and that no version window is taken to
// ship the fact while they are stranded.
func TestVersionUnpublished(t *testing.T) {
	const keep = `keep publishing version 1 ("versions": {"order.placed": {"publish": [1, 2]}}) until every consumer pinned to it is moved to a published version and deployed, then drop it`
	tests := map[string]struct {
		message    string
		migrations []Migration
	}{
		"version-unpublished": {
			`version 1 is no longer published (warren.json "versions" published 1, 2; now the newest alone, 2, without a "versions" entry): consumers of the old directory pinned to it (invoicer, mailer) read no version published now and poison each order.placed their own version's schema refuses until they are moved and deployed; ` + keep,
			[]Migration{{Fact: "order.placed", Message: keep}},
		},
		"version-unpublished-pins-moved": {
			`version 1 is no longer published (warren.json "versions" published 1, 2; now version 2 alone): consumers of the old directory pinned to it (invoicer, mailer) read no version published now and poison each order.placed their own version's schema refuses until they are moved and deployed; ` + keep,
			[]Migration{{Fact: "order.placed", Message: keep}},
		},
		"version-unpublished-window-closed": {
			`version 1 is no longer published (warren.json "versions" published 1, 2; now the newest alone, 2, without a "versions" entry): no consumer of the old directory was pinned to it; a consumer still built for it elsewhere (in another service importing this directory) poisons every order.placed`,
			nil,
		},
	}
	for name, tt := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		var got []string
		for _, c := range r.Changes {
			got = append(got, c.Message)
		}
		if diff := cmp.Diff([]string{tt.message}, got); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(tt.migrations, r.Migrations); diff != "" {
			t.Errorf("%s: migrations (-want +got):\n%s", name, diff)
		}
	}
}

// TestVersionUnpublishedReadThroughUpcasts: a consumer pinned to 2 reads
// 1 through its upcast, so a window of 1 and 3 that drops 2 strands it
// only once 1 goes too; a version still read is not reported as breaking.
func TestVersionUnpublishedReadThroughUpcasts(t *testing.T) {
	dir := func(publish string) *Dir {
		files := map[string]string{
			"warren.json": `{"package": "orders", "versions": {"order.placed": {"publish": ` + publish + `}},
  "consumers": {"mailer": {"bindings": ["order.placed"], "versions": {"order.placed": 2}}}}`,
		}
		for i, props := range []string{``, `, "note": {"type": "string"}`, `, "note": {"type": "string"}, "gift": {"type": "boolean"}`} {
			files[fmt.Sprintf("order/placed.v%d.json", i+1)] = fmt.Sprintf(`{"x-routing-key": "order.placed", "x-version": %d, "type": "object", "properties": {"id": {"type": "string"}%s}}`, i+1, props)
		}
		dir := t.TempDir()
		for name, src := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return loadDir(t, dir)
	}
	tests := []struct {
		old, new string
		want     []string
	}{
		{"[1, 2, 3]", "[1, 3]", []string{`intentional version-unpublished order.placed "" forward new:warren.json:1:64`}},
		{"[1, 3]", "[3]", []string{`breaking version-unpublished order.placed "" forward new:warren.json:1:64`}},
	}
	for _, tt := range tests {
		r := Compare(dir(tt.old), dir(tt.new))
		var got []string
		for _, c := range r.Changes {
			got = append(got, brief(c))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s -> %s: changes (-want +got):\n%s", tt.old, tt.new, diff)
		}
	}
}

// TestVersionUnpublishedForAnImporter: for a directory that imports the
// fact, what breaks is its own consumers pinned to the version, which
// the producer's directories do not show: a warning, not the producer's
// verdict on its own consumers.
func TestVersionUnpublishedForAnImporter(t *testing.T) {
	r := CompareImport(loadDir(t, "testdata/version-unpublished/old"), loadDir(t, "testdata/version-unpublished/new"), []string{"order.*"})
	if len(r.Changes) != 1 || r.Changes[0].Rule != VersionUnpublished || r.Changes[0].Verdict != Intentional ||
		!strings.HasSuffix(r.Changes[0].Message, "(a consumer here pinned to it, consumers.<name>.versions, poisons every fact: move it to a version still published and deploy it before updating)") {
		t.Errorf("changes %+v; want one intentional version-unpublished naming the consumers here", r.Changes)
	}
}
