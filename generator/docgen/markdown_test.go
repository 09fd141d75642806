package docgen

import "testing"

func TestMermaidLabel(t *testing.T) {
	for in, want := range map[string]string{
		"catalogue.#":    "catalogue.#35;",
		`say "hi" | <b>`: "say #quot;hi#quot; #124; #lt;b#gt;",
		"two\nlines\r":   "two lines",
		"#quot; already": "#35;quot; already",
		"a`b":            "a#96;b",
	} {
		if got := mermaidLabel(in); got != want {
			t.Errorf("mermaidLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
