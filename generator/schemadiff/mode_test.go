package schemadiff

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/warrenbus/warren/schemas"
)

// TestModes judges cases that break forward, backward, both or neither in
// every mode, and checks the verdict of the change that breaks and whether
// the report fails the diff.
func TestModes(t *testing.T) {
	// verdicts lists, per mode, the verdict of the case's first change.
	type verdicts map[Mode]Verdict
	all := func(v Verdict) verdicts {
		m := verdicts{}
		for _, mode := range Modes {
			m[mode] = v
		}
		return m
	}
	forward := verdicts{ // old consumers fail on new facts
		ModeBackward: Ordered, ModeBackwardTransitive: Ordered,
		ModeForward: Breaking, ModeForwardTransitive: Breaking,
		ModeFull: Breaking, ModeFullTransitive: Breaking,
		ModeNone: Ordered,
	}
	backward := verdicts{ // new consumers fail on old facts
		ModeBackward: Breaking, ModeBackwardTransitive: Breaking,
		ModeForward: Ordered, ModeForwardTransitive: Ordered,
		ModeFull: Breaking, ModeFullTransitive: Breaking,
		ModeNone: Ordered,
	}
	announcedBackward := verdicts{
		ModeBackward: Intentional, ModeBackwardTransitive: Intentional,
		ModeForward: Ordered, ModeForwardTransitive: Ordered,
		ModeFull: Intentional, ModeFullTransitive: Intentional,
		ModeNone: Ordered,
	}
	both := all(Breaking)
	both[ModeNone] = Ordered
	tests := []struct {
		dir  string
		rule string
		want verdicts
	}{
		{"property-added", PropertyAdded, forward},
		{"enum-value-added", EnumValueAdded, forward},
		{"type-widened", TypeWidened, forward},
		{"constraint-loosened", ConstraintLoosened, forward},
		{"fact-added", BindingStartedMatching, forward},
		{"stream-publish-direct", StreamPublishDirect, forward},
		{"property-removed", PropertyRemoved, backward},
		{"required-property-added", RequiredPropertyAdded, both}, // on a closed object
		{"type-narrowed", TypeNarrowed, backward},
		{"constraint-tightened", ConstraintTightened, backward},
		{"binding-stopped-matching", BindingStoppedMatching, backward},
		{"property-removed-announced", PropertyRemoved, announcedBackward},
		{"type-changed", TypeChanged, both},
		{"property-added-open", PropertyAdded, all(Compatible)},
		{"version-lowered", VersionLowered, all(Breaking)},
		{"queue-type-changed", QueueTypeChanged, all(Breaking)},
	}
	for _, tt := range tests {
		for _, mode := range Modes {
			t.Run(tt.dir+"/"+string(mode), func(t *testing.T) {
				old := loadDir(t, filepath.Join("testdata", tt.dir, "old"))
				cur := loadDir(t, filepath.Join("testdata", tt.dir, "new"))
				old.Schemas.Manifest.Compatibility = string(mode)
				cur.Schemas.Manifest.Compatibility = string(mode)
				r := Compare(old, cur)
				if len(r.Changes) == 0 || r.Changes[0].Rule != tt.rule {
					t.Fatalf("changes %v, want %s first", r.Changes, tt.rule)
				}
				c := r.Changes[0]
				want := tt.want[mode]
				if c.Verdict != want || c.Mode != mode {
					t.Errorf("%s in %s: verdict %s, want %s", c.Rule, c.Mode, c.Verdict, want)
				}
				if fails := r.Unannounced() > 0; fails != (want == Breaking) {
					t.Errorf("the diff fails: %v, want %v", fails, want == Breaking)
				}
			})
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); got != m || err != nil {
			t.Errorf("ParseMode(%s) = %s, %v", m, got, err)
		}
	}
	if got, err := ParseMode(""); got != ModeFull || err != nil {
		t.Errorf(`ParseMode("") = %s, %v; want FULL, the default`, got, err)
	}
	if _, err := ParseMode("full"); err == nil {
		t.Error(`ParseMode("full") succeeded; modes are upper case, as the meta-schema has them`)
	}
	if ModeFullTransitive.Requires() != Both || !ModeFullTransitive.Transitive() || ModeBackward.Transitive() ||
		ModeForwardTransitive.Requires() != Forward || ModeBackward.Requires() != Backward || ModeNone.Requires() != Neither {
		t.Error("Requires or Transitive disagree with the mode names")
	}
}

// The meta-schemas accept exactly the modes the diff knows.
func TestModesMatchTheMetaSchemas(t *testing.T) {
	var manifest struct {
		Defs struct {
			Compatibility struct{ Enum []Mode } `json:"compatibility"`
		} `json:"$defs"`
	}
	var fact struct {
		Properties struct {
			Compatibility struct{ Enum []Mode } `json:"x-compatibility"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemas.Manifest, &manifest); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(schemas.Fact, &fact); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(Modes))
	if got := manifest.Defs.Compatibility.Enum; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("manifest.schema.json modes %v, want %v", got, want)
	}
	if got := fact.Properties.Compatibility.Enum; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("fact.schema.json modes %v, want %v", got, want)
	}
}
