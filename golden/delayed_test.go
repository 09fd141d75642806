package golden_test

import (
	"context"
	"testing"
	"time"

	consumers "github.com/warrenbus/warren/golden/consumers/want"
	"github.com/warrenbus/warren/golden/consumers/want/consumerstest"
	"github.com/warrenbus/warren/runtime"
)

// anyFact implements the three handler interfaces of golden/consumers.
type anyFact struct{}

func (anyFact) HandleCatalogueBundlePriceChanged(context.Context, runtime.Delivery, consumers.CatalogueBundlePriceChanged) error {
	return nil
}

func (anyFact) HandleCatalogueImportCompleted(context.Context, runtime.Delivery, consumers.CatalogueImportCompleted) error {
	return nil
}

func (anyFact) HandleCatalogueItemPriceChanged(context.Context, runtime.Delivery, consumers.CatalogueItemPriceChanged) error {
	return nil
}

func (anyFact) HandleOrderPlaced(context.Context, runtime.Delivery, consumers.OrderPlaced) error {
	return nil
}

// TestGeneratedPublisherPublishesLater: golden/consumers has
// "delayedFacts", so its Publisher's In holds a fact in the delay levels
// (in the kit's virtual time) until it is due; then the two consumers
// whose patterns match order.placed ("#" and "order.placed") handle it,
// and the third ("catalogue.#") does not.
func TestGeneratedPublisherPublishesLater(t *testing.T) {
	consumerstest.Run(t, func(t *testing.T, k *consumerstest.Kit) {
		k.StartAuditLog(anyFact{})
		k.StartPriceWatcher(anyFact{})
		k.StartSearchIndexer(anyFact{})
		pub, err := consumers.NewPublisher(k.Conn())
		if err != nil {
			t.Fatal(err)
		}
		id := "o-1"
		if _, err := pub.In(2*time.Hour).PublishOrderPlaced(k.Context(), consumers.OrderPlaced{OrderID: &id}); err != nil {
			t.Fatal(err)
		}
		k.Advance(time.Hour)
		if n := len(k.Calls(consumerstest.AuditLog)) + len(k.Calls(consumerstest.PriceWatcher)); n != 0 {
			t.Fatalf("%d calls an hour before the fact is due", n)
		}
		k.Idle()
		k.WantHandled(consumerstest.AuditLog, 1)
		k.WantHandled(consumerstest.PriceWatcher, 1)
		k.WantHandled(consumerstest.SearchIndexer, 0)
		if got := consumerstest.Published[consumers.OrderPlaced](k); len(got) != 1 {
			t.Errorf("Published[OrderPlaced] = %+v", got)
		}
	})
}
