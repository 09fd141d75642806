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

// Retiring an older version is intentional once the old directory had
// closed its window, and breaking when the same change stops publishing
// it or reading it: its facts written until the deploy would reach
// consumers that no longer read them. Either way the change names the file.
func TestARetiredVersionIsJudgedByWhetherItsWindowHadClosed(t *testing.T) {
	copyDir := func(t *testing.T, src string, edit func(dir string)) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "events")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		edit(dir)
		return dir
	}
	rewrite := func(t *testing.T, file, from, to string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), from, to, 1)
		if s == string(b) {
			t.Fatalf("%s has no %q", file, from)
		}
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const src = "testdata/versions-side-by-side/new"
	// Version 1 of order.shipped is gone; the old side still published it.
	retired := copyDir(t, src, func(dir string) {
		if err := os.Remove(filepath.Join(dir, "order", "shipped.v1.json")); err != nil {
			t.Fatal(err)
		}
		rewrite(t, filepath.Join(dir, "warren.json"), `"order.shipped": { "publish": [1, 2] }`, `"order.shipped": { "publish": [2] }`)
	})
	closed := copyDir(t, src, func(dir string) {
		rewrite(t, filepath.Join(dir, "warren.json"), `"order.shipped": { "publish": [1, 2] }`, `"order.shipped": { "publish": [2] }`)
	})
	for _, c := range []struct {
		name, old string
		want      Verdict
	}{
		{"in the change that stops publishing it", src, Breaking},
		{"after its window closed", closed, Intentional},
	} {
		r := Compare(loadDir(t, c.old), loadDir(t, retired))
		var got []Change
		for _, ch := range r.Changes {
			if ch.Rule == VersionRetired {
				got = append(got, ch)
			}
		}
		if len(got) != 1 || got[0].Fact != "order.shipped" || got[0].Verdict != c.want || got[0].Breaks != Backward ||
			!strings.HasSuffix(got[0].Pos.File, filepath.Join("order", "shipped.v1.json")) || !strings.Contains(got[0].Message, "version 1 was retired") {
			t.Errorf("%s: version-retired changes %+v; want one, %s, at order/shipped.v1.json", c.name, got, c.want)
		}
		if _, ok := r.migration("order.shipped"); ok {
			t.Errorf("%s: a migration note for a retired version: %+v", c.name, r.Migrations)
		}
	}
}
