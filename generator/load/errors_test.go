package load

import "testing"

// TestErrorOnOneLine checks that an error prints on one line and holds no
// terminal control sequence, whatever the schema and its file are called.
func TestErrorOnOneLine(t *testing.T) {
	e := &Error{File: "a\nb.json", Line: 1, Col: 2, Pointer: "/x\u2028y", Msg: "bad \x1b[2J\t\xff é"}
	want := `a\nb.json:1:2: /x\u2028y: bad \x1b[2J\t\xff é`
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	plain := &Error{File: "a.json", Line: 3, Col: 4, Pointer: "/properties/größe", Msg: `expected "string", got 3`}
	if got, want := plain.Error(), `a.json:3:4: /properties/größe: expected "string", got 3`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
