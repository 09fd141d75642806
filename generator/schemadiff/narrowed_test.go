package schemadiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
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

// constraintCases are a property's schema, old and new, that differ in
// the keywords that bound, divide, match or format a value alone, so that
// the Go type stays and only the values accepted decide a cast.
var constraintCases = []struct{ old, new string }{
	{`{"type": "integer", "minimum": 1}`, `{"type": "integer", "minimum": 2}`},
	{`{"type": "integer", "minimum": 2}`, `{"type": "integer", "minimum": 1}`},
	{`{"type": "integer", "maximum": 9}`, `{"type": "integer", "exclusiveMaximum": 9}`},
	{`{"type": "integer", "exclusiveMaximum": 9}`, `{"type": "integer", "maximum": 9}`},
	{`{"type": "integer", "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 3}`},
	{`{"type": "integer"}`, `{"type": "integer", "maximum": 1.50}`},
	{`{"type": "string", "maxLength": 300}`, `{"type": "string", "maxLength": 10}`},
	{`{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 300}`},
	{`{"type": "string"}`, `{"type": "string", "minLength": 1}`},
	{`{"type": "array", "items": {"type": "string"}, "maxItems": 5}`, `{"type": "array", "items": {"type": "string"}, "maxItems": 4}`},
	{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`},
	{`{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`, `{"type": "array", "items": {"type": "string"}}`},
	{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 4}`},
	{`{"type": "integer", "multipleOf": 4}`, `{"type": "integer", "multipleOf": 2}`},
	{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 3}`},
	{`{"type": "string"}`, `{"type": "string", "pattern": "^[a-z]*$"}`},
	{`{"type": "string", "pattern": "^[a-z]*$"}`, `{"type": "string", "pattern": "^[a-c]*$"}`},
	{`{"type": "string", "pattern": "^[a-z]*$"}`, `{"type": "string"}`},
	{`{"type": "string"}`, `{"type": "string", "format": "email"}`},
	{`{"type": "string", "format": "email"}`, `{"type": "string", "format": "uuid"}`},
	{`{"type": "string", "format": "email"}`, `{"type": "string"}`},
	{`{"type": "string"}`, `{"type": "string", "format": "hostname"}`},
	{`{"type": "string", "maxLength": 10, "pattern": "^a"}`, `{"type": "string", "maxLength": 10.0, "pattern": "^a"}`},
}

// Diff and the generator read one judgement of the keywords that bound,
// divide, match or format a value (model.JudgeConstraint): a change diff
// calls narrowing in place is one whose upcast is hand-written when it
// ships as a version, and the other way round, and both say it in the
// same words (the migration quotes the generator's reason beside diff's
// change). Each case keeps the property's Go type, so that only the
// values accepted decide.
func TestDiffAndTheGeneratorJudgeConstraintsAlike(t *testing.T) {
	const manifest = `{"package": "shop", "assertFormats": ["email", "uuid"], "consumers": {"ledger": {"bindings": ["thing.happened"]}}}`
	fact := func(version int, p string) string {
		return fmt.Sprintf(`{"x-routing-key": "thing.happened", "x-version": %d, "type": "object", "properties": {"p": %s}}`, version, p)
	}
	dir := func(files map[string]string) *load.Schemas {
		fsys := fstest.MapFS{"warren.json": {Data: []byte(manifest)}}
		for name, data := range files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		s, err := load.LoadFS(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range constraintCases {
		t.Run(tt.old+" -> "+tt.new, func(t *testing.T) {
			// diff, in place.
			r := Compare(NewDir(dir(map[string]string{"thing.json": fact(1, tt.old)})), NewDir(dir(map[string]string{"thing.json": fact(1, tt.new)})))
			var narrows []string
			for _, c := range r.Changes {
				if narrowing[c.Rule] && c.Breaks&Backward != 0 {
					narrows = append(narrows, c.Message)
				}
			}
			// The generator, shipped as a version.
			m, err := model.Build(context.Background(), dir(map[string]string{"thing.v1.json": fact(1, tt.old), "thing.v2.json": fact(2, tt.new)}), model.Options{})
			if err != nil {
				t.Fatal(err)
			}
			up := m.Facts[0].Upcast
			narrowed := strings.Join(up.Narrowed, "; ")
			if (len(narrows) > 0) != (len(up.Narrowed) > 0) {
				t.Fatalf("diff narrows: %q; the generator's upcast narrows: %q (generated: %v)", narrows, narrowed, up.Generated)
			}
			for _, msg := range narrows {
				what, _, _ := strings.Cut(msg, ": ") // diff adds what it means for consumers
				if !strings.Contains(narrowed, what) {
					t.Errorf("diff says %q, the generator %q", what, narrowed)
				}
			}
		})
	}
}
