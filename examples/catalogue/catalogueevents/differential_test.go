package catalogueevents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/differential"
	"github.com/warrenbus/warren/runtime"
)

// TestGeneratedAgreesWithReference: on the example's payloads, and on
// every document derived from one, json.Unmarshal into the generated
// type accepts exactly what the embedded schema's validator accepts
// (except where docs/CONFORMANCE.md says they differ by design), and
// Validate on the decoded value agrees too.
func TestGeneratedAgreesWithReference(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	price := Money{Amount: 1999, Currency: CurrencyEUR}
	reason := "out of print"
	for _, tc := range []struct {
		fact    runtime.Fact
		sample  any
		decoded func() selfChecking
	}{
		{FactImportCompleted, ImportCompleted{ImportID: "0b9e6f2a-5d1c-4e7b-9a8f-3c2d1e0f4a5b", Supplier: "Acme Books", CompletedAt: now, Counts: ImportCompletedCounts{Created: 1, Updated: 1}}, func() selfChecking { return new(ImportCompleted) }},
		{FactItemUpdated, ItemUpdated{Item: Item{Sku: "BOOK-123", Name: "The Warren Handbook", Price: price}, Changed: []ItemUpdatedChangedItem{ItemUpdatedChangedItemPrice}, UpdatedAt: now}, func() selfChecking { return new(ItemUpdated) }},
		{FactItemDeleted, ItemDeleted{Sku: "BOOK-99", DeletedAt: now, Reason: &reason}, func() selfChecking { return new(ItemDeleted) }},
		{FactOrderPlaced, json.RawMessage(orderJSON), func() selfChecking { return new(OrderPlaced) }},
	} {
		t.Run(tc.fact.RoutingKey, func(t *testing.T) {
			sample, err := json.Marshal(tc.sample)
			if err != nil {
				t.Fatal(err)
			}
			rejected := 0
			docs := append([][]byte{sample}, differential.Mutations(sample)...)
			for _, doc := range docs {
				v := tc.decoded()
				verdict := differential.Verdict{Reference: tc.fact.Validate(doc), Generated: json.Unmarshal(doc, v)}
				if !verdict.Agree() && differential.ByDesign(doc) == "" && differential.Narrowed(verdict) == "" {
					t.Errorf("%s: %v", doc, verdict)
				}
				if verdict.Reference != nil {
					rejected++
					continue
				}
				if err := v.Validate(); err != nil && verdict.Generated == nil {
					t.Errorf("%s: decoded, but Validate on the value: %v", doc, err)
				}
			}
			if rejected == 0 || rejected == len(docs) {
				t.Errorf("%d documents, %d rejected by the reference: the mutations cross no rule", len(docs), rejected)
			}
		})
	}
}

// selfChecking is what every generated fact type is: a decoder target that
// checks itself.
type selfChecking interface {
	json.Unmarshaler
	Validate() error
}
