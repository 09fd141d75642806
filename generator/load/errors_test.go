package load

import (
	"strings"
	"testing"
)

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

// TestWithoutFollowOns checks that an error at, or below, the place of an
// error already reported in the same file is dropped, and that no other
// is: a place that merely starts with the same characters is another one.
func TestWithoutFollowOns(t *testing.T) {
	reported := ErrorList{{File: "warren.json", Pointer: "/defaults/queueType", Msg: "expected one of"}}
	more := ErrorList{
		{File: "warren.json", Pointer: "/defaults/queueType", Msg: "at"},
		{File: "warren.json", Pointer: "/defaults/queueType/x", Msg: "below"},
		{File: "warren.json", Pointer: "/defaults/queueTypes", Msg: "beside"},
		{File: "warren.json", Pointer: "/defaults", Msg: "above"},
		{File: "a.json", Pointer: "/defaults/queueType", Msg: "another file"},
	}
	var got []string
	for _, e := range reported.WithoutFollowOns(more) {
		got = append(got, e.Msg)
	}
	if strings.Join(got, ", ") != "beside, above, another file" {
		t.Errorf("WithoutFollowOns kept %q, want beside, above, another file", got)
	}
}
