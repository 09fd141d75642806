package catalogueevents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
// cannot express is rejected with the place and the reason.
func TestValidateExplains(t *testing.T) {
	var o OrderPlaced
	if err := json.Unmarshal([]byte(orderJSON), &o); err != nil {
		t.Fatal(err)
	}
	o.Lines[0].Sku = "lower-case"
	o.Lines[0].Quantity = 0
	o.Customer.Email = "not-an-email"
	err := o.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad SKU, quantity and email")
	}
	for _, want := range []string{"/lines/0/sku", "/lines/0/quantity", "/customer/email"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not point at %s:\n%v", want, err)
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
