package golden_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/differential"
)

// generated validates data the way a user's json.Unmarshal into the
// generated type does: the type's own one-pass decoding and checks.
func (f fact) generated(data []byte) error { return json.Unmarshal(data, f.new()) }

// samplesOf returns every sample of the golden facts, by "<case>/<key>".
func samplesOf(t testing.TB) map[string][][]byte {
	paths, err := filepath.Glob("*/samples/*/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	out := map[string][][]byte{}
	for _, p := range paths {
		parts := strings.Split(filepath.ToSlash(p), "/")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		key := parts[0] + "/" + parts[2]
		out[key] = append(out[key], data)
	}
	return out
}

// agrees reports whether a verdict is an agreement or a documented
// difference.
func agrees(doc []byte, v differential.Verdict) bool {
	return v.Agree() || differential.ByDesign(doc) != "" || differential.Narrowed(v) != ""
}

// TestGeneratedAgreesWithReference: on every golden sample, and on every
// document derived from one (a property dropped or added, a value
// replaced by null, by another type, by an edge value), the generated
// decoding accepts exactly what the embedded schema's validator accepts,
// except where docs/CONFORMANCE.md says they differ by design.
func TestGeneratedAgreesWithReference(t *testing.T) {
	samples := samplesOf(t)
	keys := make([]string, 0, len(samples))
	for k := range samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		f := facts[key]
		t.Run(key, func(t *testing.T) {
			checked, rejected := 0, 0
			for _, sample := range samples[key] {
				for _, doc := range append([][]byte{sample}, differential.Mutations(sample)...) {
					v := differential.Verdict{Reference: f.desc.Validate(doc), Generated: f.generated(doc)}
					if !agrees(doc, v) {
						t.Errorf("%s: %v", doc, v)
					}
					checked++
					if v.Reference != nil {
						rejected++
					}
					if v.Generated == nil {
						// The same rules on the decoded Go value.
						val := f.new()
						_ = json.Unmarshal(doc, val)
						if err := val.(interface{ Validate() error }).Validate(); err != nil {
							t.Errorf("%s: decoded, but Validate on the value: %v", doc, err)
						}
					}
				}
			}
			if rejected == 0 || rejected == checked {
				t.Errorf("%d documents, %d rejected by the reference: the mutations cross no rule", checked, rejected)
			}
		})
	}
}

// FuzzGeneratedAgreesWithReference feeds documents to one golden fact
// (chosen by the first input) and fails when the generated decoding and
// the reference validator disagree on one, outside the documented
// differences. The seed corpus is every golden sample.
func FuzzGeneratedAgreesWithReference(f *testing.F) {
	samples := samplesOf(f)
	keys := make([]string, 0, len(samples))
	for k := range samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		for _, s := range samples[k] {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		key := keys[int(which)%len(keys)]
		fc := facts[key]
		v := differential.Verdict{Reference: fc.desc.Validate(doc), Generated: fc.generated(doc)}
		if !agrees(doc, v) {
			t.Errorf("%s: %q: %v", key, doc, v)
		}
	})
}
