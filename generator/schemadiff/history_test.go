package schemadiff

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
)

// thingDir is a directory with one fact, thing.happened, of the given
// x-version and properties, in the given mode.
func thingDir(t *testing.T, mode string, version int, props string) *Dir {
	t.Helper()
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"package": "shop", "compatibility": "` + mode + `"}`)},
		"thing.json": {Data: []byte(`{"x-routing-key": "thing.happened", "x-version": ` + string(rune('0'+version)) +
			`, "type": "object", "properties": {"id": {"type": "string"}` + props + `}}`)},
	}
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return NewDir(s)
}

// The textbook case of a transitive mode: an optional property removed
// from an open object, then added back with another type. Each step is
// compatible with the one before; the last is not compatible with the
// first, whose consumers may still run and whose facts may still be queued.
func TestCompareHistory(t *testing.T) {
	const (
		v1 = `, "note": {"type": "string"}`
		v2 = ``
		v3 = `, "note": {"type": "integer"}`
	)
	tests := []struct {
		name             string
		mode             string
		firstVersion     int // x-version of the first state; the others have 2
		want             []string
		unannounced      int
		againstFirstOnly bool
	}{
		{"transitive", "FULL_TRANSITIVE", 2, []string{
			`breaking type-changed thing.happened "/properties/note" both new:thing.json:1:129`,
			`compatible property-added thing.happened "/properties/note" none new:thing.json:1:120`,
		}, 1, true},
		{"not transitive", "FULL", 2, []string{
			`compatible property-added thing.happened "/properties/note" none new:thing.json:1:120`,
		}, 0, false},
		{"raised since", "FULL_TRANSITIVE", 1, []string{ // x-version 1 -> 2 announced what came before
			`compatible property-added thing.happened "/properties/note" none new:thing.json:1:120`,
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := thingDir(t, tt.mode, tt.firstVersion, v1)
			second := thingDir(t, tt.mode, 2, v2)
			third := thingDir(t, tt.mode, 2, v3)
			r := CompareHistory(second, []Version{{Label: "HEAD~1:events", Dir: first}}, third)
			var got []string
			for _, c := range r.Changes {
				got = append(got, brief(c))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if r.Unannounced() != tt.unannounced {
				t.Errorf("unannounced %d, want %d", r.Unannounced(), tt.unannounced)
			}
			if tt.againstFirstOnly && r.Changes[0].Against != "HEAD~1:events" {
				t.Errorf("against %q, want the first version's label", r.Changes[0].Against)
			}
		})
	}
}
