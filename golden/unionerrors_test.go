package golden_test

import (
	"encoding/json"
	"errors"
	"testing"

	unions "github.com/warrenbus/warren/golden/unions/want"
	"github.com/warrenbus/warren/runtime/codec"
)

// A value that matches no branch of a generated oneOf or anyOf is refused
// with why each branch does not match: the branch's place in the schema,
// the JSON pointer of the first property it refuses and what it expected
// there.
func TestGeneratedUnionSaysWhyEachBranchDoesNotMatch(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"oneOf of structs: a constant of neither", `{"method":{"type":"cash"},"reference":"r"}`,
			`/method: a value matching one of the branches (oneOf); oneOf/0 does not: /method/type: the constant "card"; oneOf/1 does not: /method/type: the constant "transfer"`},
		{"oneOf of structs: a required property missing", `{"method":{"type":"transfer"},"reference":"r"}`,
			`/method: a value matching one of the branches (oneOf); oneOf/0 does not: /method/type: the constant "card"; oneOf/1 does not: /method: required property "iban"`},
		{"anyOf of scalars", `{"method":{"type":"card","last4":"1"},"reference":true}`,
			`/reference: a value matching one of the branches (anyOf); anyOf/0 does not: /reference: a string, got a boolean; anyOf/1 does not: /reference: an integer, got a boolean`},
		{"oneOf of a number and a constant", `{"method":{"type":"card","last4":"1"},"reference":"r","amount_or_free":-1}`,
			`/amount_or_free: a value matching one of the branches (oneOf); oneOf/0 does not: /amount_or_free: more than 0; oneOf/1 does not: /amount_or_free: a string, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v unions.PaymentMade
			err := json.Unmarshal([]byte(tc.in), &v)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("decoding %s:\ngot  %v\nwant %s", tc.in, err, tc.want)
			}
			var ce *codec.Error
			if !errors.As(err, &ce) || len(ce.Branches) != 2 {
				t.Errorf("the *codec.Error holds %d branches' reasons, want 2: %+v", len(ce.Branches), ce)
			}
		})
	}
}
