package schemadiff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A narrowed constraint shipped as a new version is not mechanical: a
// generated upcast would copy an old fact's value as it is, and its result
// would fail the new version's schema (a note of 50 characters, read by a
// consumer of version 2 whose maxLength is 10, is poisoned). The generator
// leaves the upcast to the consumer's handler, which does not compile
// without it, and the migration says so and what the upcast must do.
func TestANarrowedConstraintIsUpcastByHand(t *testing.T) {
	r := Compare(loadDir(t, "testdata/constraint-tightened-shipped-as-version/old"), loadDir(t, "testdata/constraint-tightened-shipped-as-version/new"))
	m, ok := r.migration("order.placed")
	if !ok {
		t.Fatalf("no migration for order.placed: %+v", r.Migrations)
	}
	want := `1→2 hand-written (UpcastOrderPlacedV1: property "note" accepts fewer values in version 2 (maxLength lowered from 300 to 10), so no upcast is generated: it must map each value version 2 refuses to one it accepts, and the consumer does not compile until its handler has it)`
	if !strings.Contains(m.Message, want) || strings.Contains(m.Message, "generated,") || strings.HasSuffix(m.Message, "generated") {
		t.Errorf("migration %q\nwant it to say %q", m.Message, want)
	}

	// Shipped in place, the advice to keep the old version beside the new
	// one says the same of the upcast it would need.
	r = Compare(loadDir(t, "testdata/constraint-tightened/old"), loadDir(t, "testdata/constraint-tightened/new"))
	m, ok = r.migration("order.placed")
	want = "so that new consumers read old facts through an upcast written by hand: version 2 refuses values that version 1 facts may hold, so no upcast is generated for the change, and the consumer does not compile until its handler has the upcast, which must map each value version 2 refuses to one it accepts"
	if !ok || !strings.Contains(m.Message, want) {
		t.Errorf("migration %+v\nwant it to say %q", m, want)
	}
	// A break that refuses no value of the old facts keeps the plain note.
	r = Compare(loadDir(t, "testdata/property-removed/old"), loadDir(t, "testdata/property-removed/new"))
	if m, _ := r.migration("order.placed"); !strings.HasSuffix(m.Message, "so that new consumers read old facts through upcasts") {
		t.Errorf("migration of a removed property: %q", m.Message)
	}
}

// What diff calls a narrowing (in place) is what the generator writes no
// upcast for (shipped as a version): each case of a rule that narrows,
// its old fact kept as version 1 beside the new one as version 2, has a
// hand-written upcast, whatever makes it so.
func TestWhatNarrowsIsUpcastByHandWhenShippedAsAVersion(t *testing.T) {
	for rule := range narrowing {
		t.Run(rule, func(t *testing.T) {
			src := filepath.Join("testdata", rule)
			dir := filepath.Join(t.TempDir(), "events")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(src, "new"))); err != nil {
				t.Fatal(err)
			}
			version := func(from, to string, v string) {
				b, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				s := strings.Replace(string(b), "{", `{"x-version": `+v+`,`, 1)
				if err := os.WriteFile(to, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			version(filepath.Join(src, "old", "order", "placed.json"), filepath.Join(dir, "order", "placed.v1.json"), "1")
			version(filepath.Join(src, "new", "order", "placed.json"), filepath.Join(dir, "order", "placed.v2.json"), "2")
			if err := os.Remove(filepath.Join(dir, "order", "placed.json")); err != nil {
				t.Fatal(err)
			}
			r := Compare(loadDir(t, filepath.Join(src, "old")), loadDir(t, dir))
			if !slicesContainsRule(r, rule) {
				t.Fatalf("shipped as a version, the change is no %s: %+v", rule, r.Changes)
			}
			m, ok := r.migration("order.placed")
			if !ok || !strings.Contains(m.Message, "1→2 hand-written (UpcastOrderPlacedV1: ") {
				t.Errorf("migration %+v: want a hand-written upcast", m)
			}
		})
	}
}

func slicesContainsRule(r *Report, rule string) bool {
	for _, c := range r.Changes {
		if c.Rule == rule {
			return true
		}
	}
	return false
}

// Every version of a fact shares its routing key, so no version window
// carries a new one: a routing key changed with a raised x-version is as
// breaking as without, and the advice is a new fact beside the old one,
// not a raised x-version.
func TestARaisedVersionDoesNotAnnounceARoutingKeyChange(t *testing.T) {
	r := Compare(loadDir(t, "testdata/routing-key-changed-announced/old"), loadDir(t, "testdata/routing-key-changed-announced/new"))
	if r.Unannounced() != 1 || r.Changes[0].Rule != RoutingKeyChanged || r.Changes[0].Verdict != Breaking {
		t.Fatalf("changes %+v: want one unannounced routing-key-changed", r.Changes)
	}
	if _, ok := r.migration("order.dispatched"); ok {
		t.Errorf("a version-window migration for a routing key change: %+v", r.Migrations)
	}
	var raised string
	for _, c := range r.Changes {
		if c.Rule == VersionRaised {
			raised = c.Message
		}
	}
	if want := "x-version raised from 1 to 2, which does not announce the routing key change: every version of a fact shares its routing key"; raised != want {
		t.Errorf("version-raised says %q, want %q", raised, want)
	}
	hint := r.hint(plain)
	if strings.Contains(hint, "raise x-version of order.dispatched") || !strings.Contains(hint, "A routing key cannot change in place, and raising x-version does not announce it") ||
		!strings.Contains(hint, "Declare order.dispatched as a new fact in a file of its own beside the old one") {
		t.Errorf("hint %q: want the advice for a routing key change", hint)
	}
	// Without the raise the advice is the same.
	if plainHint := Compare(loadDir(t, "testdata/routing-key-changed/old"), loadDir(t, "testdata/routing-key-changed/new")).hint(plain); plainHint != hint {
		t.Errorf("hint without the raise %q\nwith it %q", plainHint, hint)
	}
}
