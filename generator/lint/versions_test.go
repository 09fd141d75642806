package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// pinnedDir writes a schema directory with the facts of
// testdata/pinned-version-unpublished (order.placed in versions 1 to 3,
// order.shipped in 1 and 2), less the versions of drop, and manifest as
// its warren.json.
func pinnedDir(t *testing.T, manifest string, drop ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(filepath.Join(dir, "order"), os.DirFS("testdata/pinned-version-unpublished/order")); err != nil {
		t.Fatal(err)
	}
	for _, f := range drop {
		if err := os.Remove(filepath.Join(dir, "order", f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, load.ManifestFile), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pinnedFindings lints dir and returns its pinned-version-unpublished
// findings, and whether the model builds.
func pinnedFindings(t *testing.T, dir string) ([]string, error) {
	t.Helper()
	s, err := load.Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	m, buildErr := model.Build(context.Background(), s, model.Options{Package: "shop"})
	var out []string
	for _, f := range Run(NewInput(s, m)) {
		if f.Rule == PinnedVersionUnpublished {
			out = append(out, fmt.Sprintf("%s:%d:%d %s", f.File, f.Line, f.Col, f.Message))
		}
	}
	return out, buildErr
}

// A batch consumer reads the oldest version declared alone: the model
// refuses it pinned to a newer version, or without a pin, while an older
// one is declared. So the advice given to other consumers (pin it to a
// published version) cannot be followed by one: it is told to publish
// its version again, or to retire the versions before the oldest
// published (naming their files and the other consumers still pinned to
// them) in the change that moves its pin, which builds.
func TestPinnedVersionUnpublishedOfABatchConsumer(t *testing.T) {
	const manifest = `{
  "package": "shop",
  "versions": { "order.placed": { "publish": [2, 3] } },
  "consumers": {
    "ledger": { "bindings": ["order.placed"], "batch": { "size": 10, "wait": "100ms" }, "versions": { "order.placed": 1 } },
    "mailer": { "bindings": ["order.placed"], "versions": { "order.placed": 1 } },
    "tracker": { "bindings": ["order.shipped"], "batch": { "size": 10, "wait": "100ms" }, "versions": { "order.shipped": 1 } }
  }
}`
	got, err := pinnedFindings(t, pinnedDir(t, manifest))
	if err != nil {
		t.Fatalf("the directory does not build: %v", err)
	}
	want := []string{
		`warren.json:5:119 consumer "ledger" is pinned to version 1 of order.placed, but the publisher publishes versions 2, 3 (warren.json "versions"): it reads version 1 and no newer one, so it judges every order.placed by its version-1 schema and poisons each one that schema refuses. A batch consumer reads the oldest version declared alone, and no other: it cannot be pinned to a newer version, or left without a pin, while version 1 is declared (warren check refuses it), so moving its pin is no way out. Either publish version 1 too ("versions": {"order.placed": {"publish": [1, 2, 3]}}) while it is pinned; or retire version 1: once consumer "mailer", pinned to it too, is moved to version 2 or newer and deployed, remove the file of version 1 (order/placed.v1.json) and, in the same change, pin "ledger" to version 2, the oldest left ("versions": {"order.placed": 2}), and deploy it: it then reads the version-2 facts it poisons now (warren replay delivers those it poisoned again), and poisons a fact of version 1 alone still queued unless version 2's schema accepts it (warren status, the outbox). warren diff reports the removal as version-retired, breaking since "ledger" read version 1: here that is the way out`,
		`warren.json:6:77 consumer "mailer" is pinned to version 1 of order.placed, but the publisher publishes versions 2, 3 (warren.json "versions"): it reads version 1 and no newer one, so it judges every order.placed by its version-1 schema and poisons each one that schema refuses; pin it to a published version (2 or 3; without a pin it reads the newest) and deploy it, or publish version 1 too ("versions": {"order.placed": {"publish": [1, 2, 3]}}) while it is pinned`,
		`warren.json:7:122 consumer "tracker" is pinned to version 1 of order.shipped, but the publisher publishes the newest alone, 2 (warren.json has no "versions" entry for it): it reads version 1 and no newer one, so it judges every order.shipped by its version-1 schema and poisons each one that schema refuses. A batch consumer reads the oldest version declared alone, and no other: it cannot be pinned to a newer version, or left without a pin, while version 1 is declared (warren check refuses it), so moving its pin is no way out. Either publish version 1 too ("versions": {"order.shipped": {"publish": [1, 2]}}) while it is pinned; or retire version 1: once no other consumer is pinned to it, remove the file of version 1 (order/shipped.v1.json) and, in the same change, remove the pin of "tracker" (it then reads version 2, the newest, alone), and deploy it: it then reads the version-2 facts it poisons now (warren replay delivers those it poisoned again), and poisons a fact of version 1 alone still queued unless version 2's schema accepts it (warren status, the outbox). warren diff reports the removal as version-retired, breaking since "tracker" read version 1: here that is the way out`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}

	// The advice other consumers get does not build for a batch consumer.
	for _, moved := range []string{
		strings.Replace(manifest, `"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.placed": 1 }`, `"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.placed": 2 }`, 1),
		strings.Replace(manifest, `"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.shipped": 1 }`, `"batch": { "size": 10, "wait": "100ms" }`, 1),
	} {
		if _, err := pinnedFindings(t, pinnedDir(t, moved)); err == nil || !strings.Contains(err.Error(), "pin it to the oldest version, 1") {
			t.Errorf("a batch consumer's pin moved while version 1 is declared: %v; want it refused", err)
		}
	}

	// Its advice does: both ways out build and leave nothing to warn of.
	for name, tt := range map[string]struct {
		manifest string
		drop     []string
	}{
		"published again": {strings.Replace(manifest,
			`"versions": { "order.placed": { "publish": [2, 3] } },`,
			`"versions": { "order.placed": { "publish": [1, 2, 3] }, "order.shipped": { "publish": [1, 2] } },`, 1), nil},
		"retired": {strings.NewReplacer(
			`"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.placed": 1 }`, `"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.placed": 2 }`,
			`"versions": { "order.placed": 1 } },`, `"versions": { "order.placed": 2 } },`,
			`"batch": { "size": 10, "wait": "100ms" }, "versions": { "order.shipped": 1 }`, `"batch": { "size": 10, "wait": "100ms" }`,
		).Replace(manifest), []string{"placed.v1.json", "shipped.v1.json"}},
	} {
		got, err := pinnedFindings(t, pinnedDir(t, tt.manifest, tt.drop...))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: build %v, findings %v; want it to build, and none", name, err, got)
		}
	}
}
