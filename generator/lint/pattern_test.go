package lint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A required name is matched against patternProperties keys as ECMA-262:
// a lookahead key covers "colour" and leaves out "x-colour".
func TestRequiredMatchedByLookaheadPattern(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"warren.json": `{"consumers": {"tagger": {"bindings": ["tag.added"]}}}`,
		"tag.json": `{
  "x-routing-key": "tag.added",
  "type": "object",
  "additionalProperties": false,
  "required": ["colour", "x-colour"],
  "patternProperties": {"^(?!x-)[a-z]+$": {"type": "string"}}
}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range Run(input(t, dir)) {
		if f.Rule == RequiredNotInProperties {
			got = append(got, f.Pointer+": "+f.Message)
		}
	}
	want := []string{`/required/1: "x-colour" is required but no property declares it; a typo, or a missing entry in "properties"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
