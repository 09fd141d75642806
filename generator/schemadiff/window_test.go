package schemadiff

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// windowReport is versionsReport with the version window open: the
// publisher publishes order.placed in versions 1 and 3, so consumers of
// either read what it publishes.
func windowReport(t *testing.T) *Report {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(dir, os.DirFS("testdata/versions-side-by-side/new")); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "warren.json"))
	if err != nil {
		t.Fatal(err)
	}
	opened := strings.Replace(string(manifest), `"order.placed": { "publish": [2, 3] }`, `"order.placed": { "publish": [1, 3] }`, 1)
	if opened == string(manifest) {
		t.Fatal("the testdata manifest no longer lists order.placed's versions as this test expects")
	}
	if err := os.WriteFile(filepath.Join(dir, "warren.json"), []byte(opened), 0o600); err != nil {
		t.Fatal(err)
	}
	return Compare(loadDir(t, "testdata/versions-side-by-side/old"), loadDir(t, dir))
}

// A break shipped side by side, with upcasts and the old version still
// published, is safe in any order: the deploy verdict says so, in every
// format, instead of "no order is safe" beside a migration that says how
// it is safe. Without the window the verdict stands.
func TestABreakShippedByTheVersionWindowIsSafeInAnyOrder(t *testing.T) {
	r := windowReport(t)
	m, ok := r.migration("order.placed")
	if !ok || !m.Safe {
		t.Fatalf("migration of order.placed: %+v; want it safe", r.Migrations)
	}
	if len(r.Deploys) != 1 {
		t.Fatalf("deploys: %+v; want order.placed's", r.Deploys)
	}
	d := r.Deploys[0]
	want := "the break of order.placed is shipped safely by its version window: deploy its producer and consumers in any order (the producer may deploy first, since it publishes the old version too; consumers may deploy first, since they read old facts through upcasts)"
	if d.Fact != "order.placed" || d.First != "any" || d.Message != want {
		t.Errorf("deploy = %+v\nwant First any and %q", d, want)
	}
	var text, md, js bytes.Buffer
	if err := r.WriteText(&text, versionsLabels); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md, versionsLabels); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String(), "json": js.String()} {
		if strings.Contains(out, "no order is safe") || !strings.Contains(out, "shipped safely by its version window") {
			t.Errorf("%s output still judges the break unsafe:\n%s", name, out)
		}
	}

	closed := versionsReport(t)
	if d := closed.Deploys[0]; d.First != "" || !strings.Contains(d.Message, "no order is safe") {
		t.Errorf("without the window (version 1 not published): deploy %+v; want no order safe", d)
	}
}
