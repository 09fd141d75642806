package codec_test

import (
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/codec"
)

func TestBranchesCountTheBranchesWhosePropertiesAreThere(t *testing.T) {
	anyOf := codec.Branches{Names: []string{"a", "b", "c"}, Sets: []uint64{0b001, 0b110}}
	oneOf := anyOf
	oneOf.OneOf = true
	for _, tc := range []struct {
		a, b, c      bool
		anyOk, oneOk bool
	}{
		{false, false, false, false, false},
		{true, false, false, true, true},
		{false, true, false, false, false}, // the second branch needs b and c
		{false, true, true, true, true},
		{true, true, true, true, false}, // both branches hold
	} {
		if err := anyOf.Check(tc.a, tc.b, tc.c); (err == nil) != tc.anyOk {
			t.Errorf("anyOf.Check(%v, %v, %v) = %v", tc.a, tc.b, tc.c, err)
		}
		if err := oneOf.Check(tc.a, tc.b, tc.c); (err == nil) != tc.oneOk {
			t.Errorf("oneOf.Check(%v, %v, %v) = %v", tc.a, tc.b, tc.c, err)
		}
	}
	err := anyOf.Check(false, false, false)
	if err == nil || !strings.Contains(err.Error(), `(anyOf): "a"; or "b" and "c"`) {
		t.Errorf("the error names the branches: %v", err)
	}
	always := codec.Branches{OneOf: true, Names: []string{"a"}, Sets: []uint64{0, 0b1}}
	if always.Check(false) != nil || always.Check(true) == nil {
		t.Error("a branch that requires no optional property always holds")
	}
}
