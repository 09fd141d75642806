package runtime

import (
	"context"
	"strings"
	"testing"
)

// HandleEach decodes each payload into a new fact of its own, in one pass
// for a type that decodes itself and with encoding/json for any other,
// and calls the handler with the pointer it made.
func TestHandleEachDecodesIntoNewFacts(t *testing.T) {
	var got []*codedItem
	r := HandleEach(codedFact("item.added"), func() any { return new(codedItem) }, func(_ context.Context, _ Delivery, fact any) error {
		got = append(got, fact.(*codedItem))
		return nil
	})
	if r.decodeAt == nil {
		t.Fatal("HandleEach of a codec.Decoder has no one-pass decoder")
	}
	for _, sku := range []string{"a", "b"} {
		body := `{"id":"x","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"` + sku + `","n":3}}`
		_, h, err := decodeEnvelopeOnce([]byte(body), r.decodeAt)
		if err != nil {
			t.Fatalf("sku %s: %v", sku, err)
		}
		if err := h.call.invoke(context.Background(), Delivery{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] == got[1] || got[0].SKU != "a" || got[1].SKU != "b" || got[1].N != 3 {
		t.Fatalf("handler saw %+v, want two facts of their own, skus a and b", got)
	}
	body := `{"id":"x","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":""}}`
	if _, _, err := decodeEnvelopeOnce([]byte(body), r.decodeAt); err == nil || !strings.Contains(err.Error(), "/sku") {
		t.Errorf("empty sku: %v, want the payload's error at /sku", err)
	}

	var plain []item
	p := HandleEach(itemFact("item.added"), func() any { return new(item) }, func(_ context.Context, _ Delivery, fact any) error {
		plain = append(plain, *fact.(*item))
		return nil
	})
	if p.decodeAt != nil {
		t.Error("HandleEach of a type without DecodeJSON has a one-pass decoder")
	}
	call, err := p.decode([]byte(`{"sku":"c","n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := call(context.Background(), Delivery{}); err != nil || len(plain) != 1 || plain[0] != (item{SKU: "c", N: 2}) {
		t.Errorf("plain route: %v, handler saw %+v", err, plain)
	}
	if _, err := p.decode([]byte(`{"sku":`)); err == nil || !IsPermanent(err) {
		t.Errorf("bad payload: %v, want a permanent error", err)
	}
}
