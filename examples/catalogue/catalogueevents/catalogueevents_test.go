package catalogueevents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/codec"
)

const orderJSON = `{
  "order_id": "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11",
  "customer": {"customer_id": "c-42", "email": "ada@example.com"},
  "lines": [{"sku": "BOOK123", "quantity": 2, "unit_price": {"amount": 1999, "currency": "EUR"}}],
  "total": {"amount": 3998, "currency": "EUR"},
  "payment": {"method": "invoice", "due_days": 30},
  "placed_at": "2024-05-01T10:00:00Z"
}`

func TestOrderPlacedRoundTrip(t *testing.T) {
	var o OrderPlaced
	if err := json.Unmarshal([]byte(orderJSON), &o); err != nil {
		t.Fatal(err)
	}
	if o.Payment.InvoicePayment == nil || o.Payment.InvoicePayment.DueDays != InvoicePaymentDueDays30 || o.Payment.CardPayment != nil {
		t.Fatalf("payment = %+v, want the invoice branch", o.Payment)
	}
	if !o.PlacedAt.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) || o.Lines[0].Sku != "BOOK123" {
		t.Fatalf("decoded %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal([]byte(orderJSON), &a)
	json.Unmarshal(out, &b)
	if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
		t.Errorf("round trip changed the document:\n%s\n%s", ja, jb)
	}
	if err := FactOrderPlaced.Validate(out); err != nil {
		t.Errorf("FactOrderPlaced.Validate: %v", err)
	}
}

// TestValidateExplains checks that a value breaking constraints Go types
// cannot express is rejected with the place and the reason, by Validate on
// the Go value and by json.Unmarshal of its JSON alike.
func TestValidateExplains(t *testing.T) {
	for _, tc := range []struct {
		at, want string
		breakIt  func(o *OrderPlaced)
	}{
		{"/lines/0/sku", "matching", func(o *OrderPlaced) { o.Lines[0].Sku = "lower-case" }},
		{"/lines/0/quantity", "at least 1", func(o *OrderPlaced) { o.Lines[0].Quantity = 0 }},
		{"/customer/email", "email", func(o *OrderPlaced) { o.Customer.Email = "not-an-email" }},
	} {
		var o OrderPlaced
		if err := json.Unmarshal([]byte(orderJSON), &o); err != nil {
			t.Fatal(err)
		}
		tc.breakIt(&o)
		err := o.Validate()
		if err == nil {
			t.Fatalf("Validate accepted a bad %s", tc.at)
		}
		if want := tc.at + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: error does not point at %s saying %q:\n%v", tc.at, tc.want, err)
		}
		var back OrderPlaced
		if err := json.Unmarshal(codec.Marshal(&o), &back); err == nil || !strings.HasPrefix(err.Error(), tc.at+": ") {
			t.Errorf("json.Unmarshal: got %v, want an error at %s", err, tc.at)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
