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

// TestErrLeavesListIntact checks that Err sorts and compacts a copy: a
// caller that goes on using its list (to rewrite file names, say) must
// not find nil entries where duplicates were.
func TestErrLeavesListIntact(t *testing.T) {
	a := &Error{File: "a.json", Line: 1, Col: 1, Msg: "x"}
	dup := *a
	b := &Error{File: "b.json", Line: 1, Col: 1, Msg: "y"}
	list := ErrorList{b, a, &dup}
	err := list.Err()
	if got, ok := err.(ErrorList); !ok || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Err() = %#v, want [a b]", err)
	}
	for i, e := range list {
		if e == nil {
			t.Fatalf("list[%d] is nil after Err", i)
		}
	}
}
