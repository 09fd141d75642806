package schemaset

import (
	"errors"
	"testing"
)

// A number too large for the reference validator's arithmetic (an
// exponent of a hundred million) is a payload the schema refuses, not a
// panic: a consumer poisons it at once as invalid, instead of retrying a
// "panic" that will recur on every try.
func TestHugeNumberIsRefusedNotAPanic(t *testing.T) {
	s := NewWith(map[string]string{
		"n.json": `{"type": "object", "properties": {"n": {"type": "number", "maximum": 10, "multipleOf": 0.5}}}`,
	}, Options{})
	for _, payload := range []string{`{"n": 1e99999999}`, `{"n": -1e99999999}`} {
		err := s.Validate("n.json", []byte(payload))
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 || ve.Problems[0].Pointer != "/n" {
			t.Errorf("Validate(%s) = %v; want a validation error at /n", payload, err)
		}
	}
}
