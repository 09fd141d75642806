package runtime

import (
	"errors"
	"fmt"
	"testing"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// A payload that fails a schema the reference validator checks is told
// as "payload of KEY does not match its schema: POINTER: MESSAGE", as
// RUNTIME.md says, not with the schema's location said a second time; the
// validator's error stays reachable.
func TestPayloadProblemsAreSaidOnce(t *testing.T) {
	ve := &schemaset.ValidationError{Schema: "payment/captured.json", Problems: []schemaset.Problem{{Pointer: "", Message: "missing property 'order_id'"}}}
	err := fmt.Errorf("payload of %s does not match its schema: %w", "payment.captured", problemsOnly(ve))
	if want := "payload of payment.captured does not match its schema: (root): missing property 'order_id'"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
	var got *schemaset.ValidationError
	if !errors.As(err, &got) || got != ve {
		t.Errorf("the validator's error is not reachable from %v", err)
	}
	plain := errors.New("/reason: the constant \"unpaid\"")
	if problemsOnly(plain) != plain {
		t.Errorf("an error without problems was changed")
	}
}
