package schemadiff

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
)

// An optional property renamed on an open object is two compatible
// changes on the wire, one removed and one added, and yet every reader
// loses the value without an error: each change says it is probably a
// rename, what that costs and how to rename without the loss. Only a pair
// that can be told apart is one: the same type, one of each per object.
func TestProbableRenames(t *testing.T) {
	const hint = "probably a rename"
	obj := func(props string) string {
		return `{"type": "object", "properties": {` + props + `}}`
	}
	tests := []struct {
		name     string
		old, new string
		want     []string // "rule (directions it breaks) hint?", sorted
	}{
		{"renamed", obj(`"a": {"type": "string"}`), obj(`"b": {"type": "string"}`),
			[]string{"property-added (none) hint", "property-removed (none) hint"}},
		{"renamed through a $ref", obj(`"a": {"$ref": "defs.json#/$defs/name"}`), obj(`"b": {"type": "string"}`),
			[]string{"property-added (none) hint", "property-removed (none) hint"}},
		{"renamed beside other changes of other types", obj(`"a": {"type": "string"}, "n": {"type": "integer"}`), obj(`"b": {"type": "string"}, "m": {"type": "boolean"}`),
			[]string{"property-added (none)", "property-added (none) hint", "property-removed (none)", "property-removed (none) hint"}},
		{"another type", obj(`"a": {"type": "string"}`), obj(`"b": {"type": "integer"}`),
			[]string{"property-added (none)", "property-removed (none)"}},
		{"two of one type: which became which is not known", obj(`"a": {"type": "string"}, "c": {"type": "string"}`), obj(`"b": {"type": "string"}, "d": {"type": "string"}`),
			[]string{"property-added (none)", "property-added (none)", "property-removed (none)", "property-removed (none)"}},
		{"the new one required", obj(`"a": {"type": "string"}`), `{"type": "object", "required": ["b"], "properties": {"b": {"type": "string"}}}`,
			[]string{"property-removed (none)", "required-property-added (backward)"}},
		{"a closed object, where both break", `{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}`, `{"type": "object", "additionalProperties": false, "properties": {"b": {"type": "string"}}}`,
			[]string{"property-added (forward)", "property-removed (backward)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(propertyDir(t, tt.old), propertyDir(t, tt.new))
			var got []string
			for _, c := range r.Changes {
				s := fmt.Sprintf("%s (%s)", c.Rule, c.Breaks)
				if strings.Contains(c.Message, hint) {
					s += " hint"
				}
				if c.Verdict != Compatible && c.Breaks == Neither {
					t.Errorf("%s: verdict %s; want compatible", c.Rule, c.Verdict)
				}
				got = append(got, s)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The messages of a probable rename, each read on its own beside its
// line: both name the other property and its type; the removal says what
// readers lose and how to rename without the loss, the addition points to it.
func TestProbableRenameMessages(t *testing.T) {
	r := Compare(loadDir(t, "testdata/property-renamed-open/old"), loadDir(t, "testdata/property-renamed-open/new"))
	const loss = `Compatible on the wire, but readers lose the value without an error: consumers built from the old schema find no "note" in new facts, and consumers built from the new schema find no "comment" in facts written under the old one (queued, in poison, in an outbox). To rename it without the loss, keep "note" beside "comment", and fill both, until every consumer reads "comment"; or ship the rename as a new version beside the old one, with "x-renamed-from": "note" on "comment" and both versions published (warren.json "versions"): the generated upcast and downcast carry the value across`
	want := []string{
		`property-added: new optional property "comment", of type "string" like "note", which was removed beside it: probably a rename, whose cost to readers the removal of "note" says`,
		`property-removed: property "note" was removed from an open object where it was optional; "comment", of type "string" like it, was added beside it: probably a rename. ` + loss,
	}
	var got []string
	for _, c := range r.Changes {
		got = append(got, c.Rule+": "+c.Message)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if r.Unannounced() != 0 || r.Compatible() != 2 {
		t.Errorf("%d unannounced, %d compatible; want 0 and 2", r.Unannounced(), r.Compatible())
	}
}

// A rename declared with x-renamed-from in a new version kept beside the
// old one is carried across by the generated upcast and downcast: no
// hint. Undeclared, the same version window loses the value, and the
// hint says so.
func TestADeclaredRenameInAVersionWindowIsNoProbableRename(t *testing.T) {
	fact := func(version int, props string) string {
		return fmt.Sprintf(`{"x-routing-key": "order.placed", "x-version": %d, "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, %s}}`, version, props)
	}
	dir := func(files map[string]string) *Dir {
		fsys := fstest.MapFS{}
		for name, data := range files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		s, err := load.LoadFS(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		return NewDir(s)
	}
	const manifest = `{"package": "shop", "consumers": {"ledger": {"bindings": ["order.placed"]}}}`
	old := dir(map[string]string{"warren.json": manifest, "order/placed.v1.json": fact(1, `"note": {"type": "string"}`)})
	window := `{"package": "shop", "versions": {"order.placed": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["order.placed"]}}}`
	for _, tt := range []struct {
		name    string
		comment string
		hint    bool
	}{
		{"declared", `"comment": {"type": "string", "x-renamed-from": "note"}`, false},
		{"undeclared", `"comment": {"type": "string"}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(old, dir(map[string]string{
				"warren.json":          window,
				"order/placed.v1.json": fact(1, `"note": {"type": "string"}`),
				"order/placed.v2.json": fact(2, tt.comment),
			}))
			hints := 0
			for _, c := range r.Changes {
				if strings.Contains(c.Message, "probably a rename") {
					hints++
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tt.hint]; hints != want {
				t.Errorf("%d changes say it is probably a rename, want %d: %+v", hints, want, r.Changes)
			}
		})
	}
}
