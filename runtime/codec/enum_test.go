package codec_test

import (
	"testing"

	"github.com/warrenbus/warren/runtime/codec"
)

func TestEnumValues(t *testing.T) {
	s := codec.Strings{Sorted: []string{"closed", "open"}, Expected: `one of "open", "closed"`}
	for _, v := range []string{"open", "closed"} {
		if err := s.Check(v); err != nil {
			t.Errorf("Check(%q) = %v", v, err)
		}
	}
	if err := s.Check("Open"); err == nil || err.Error() != `(root): one of "open", "closed"` {
		t.Errorf(`Check("Open") = %v`, err)
	}
	i := codec.Ints{Sorted: []int64{-1, 2}, Expected: "one of 2, -1"}
	if err := i.Check(-1); err != nil {
		t.Errorf("Check(-1) = %v", err)
	}
	if err := i.Check(0); err == nil || err.Error() != "(root): one of 2, -1" {
		t.Errorf("Check(0) = %v", err)
	}
}
